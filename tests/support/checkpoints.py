"""Small Hugging Face sequence classifiers with their own tokenizers, made offline.

The `tokenizers` library trains a WordPiece (BERT), a byte-level BPE (RoBERTa) or a
SentencePiece-style Unigram (XLM-R) tokenizer on a few sentences; transformers wraps it
and saves it beside a 2-layer, 32-wide random classifier, as `save_pretrained` does for a
real checkpoint (tokenizer.json + tokenizer_config.json).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import transformers as tf
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

LABELS = ("invoice", "letter")
ENGLISH = [
    ("Invoice number 42 for the delivery of ten chairs, payable within thirty days.", "invoice"),
    ("Invoice 7: two desks and one lamp, total amount due 310 euros.", "invoice"),
    ("Dear Sir, thank you for your kind letter of May; we will visit in June.", "letter"),
    ("Dear Anna, I hope this letter finds you well after the long winter.", "letter"),
]
JAPANESE = [
    ("請求書番号四十二。椅子十脚の納品代金を三十日以内にお支払いください。", "invoice"),
    ("請求書第七号。机二台と照明一台、合計三万一千円をお支払いください。", "invoice"),
    ("拝啓、五月のお手紙ありがとうございました。六月にお伺いいたします。", "letter"),
    ("アンナ様、長い冬の後もお元気でお過ごしのことと存じます。敬具", "letter"),
]
SPECIALS_BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SPECIALS_ROBERTA = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's and XLM-R's ids 0-4


def _bert(texts: list[str]) -> tf.PreTrainedTokenizerFast:
    """A WordPiece tokenizer framed [CLS] ... [SEP], pad 0."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(
        texts, trainers.WordPieceTrainer(vocab_size=400, special_tokens=SPECIALS_BERT)
    )
    tok.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    return tf.BertTokenizerFast(tokenizer_object=tok)


def _roberta(texts: list[str]) -> tf.PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer framed <s> ... </s>, pad 1 (RoBERTa's)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS_ROBERTA, initial_alphabet=alphabet
    )
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return tf.RobertaTokenizerFast(tokenizer_object=tok)


def _xlmr(texts: list[str]) -> tf.PreTrainedTokenizerFast:
    """A SentencePiece-style Unigram tokenizer framed <s> ... </s>, pad 1 (XLM-R's)."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=300, special_tokens=SPECIALS_ROBERTA, unk_token="<unk>"
    )
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tf.XLMRobertaTokenizerFast(tokenizer_object=tok)


def config_of(family: str, vocab: int) -> tf.PretrainedConfig:
    common = dict(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,  # RoBERTa's positions start after the pad id
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
        architectures=[f"{family}ForSequenceClassification"],
    )
    if family == "Bert":
        return tf.BertConfig(**common, pad_token_id=0)
    kind = tf.RobertaConfig if family == "Roberta" else tf.XLMRobertaConfig
    return kind(**common, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2)


# family -> (tokenizer builder, documents): XLM-R reads Japanese, as its checkpoints do.
FAMILIES: dict[str, tuple[Callable[[list[str]], tf.PreTrainedTokenizerFast], list]] = {
    "Bert": (_bert, ENGLISH),
    "Roberta": (_roberta, ENGLISH + JAPANESE),
    "XLMRoberta": (_xlmr, JAPANESE),
}


def make_checkpoint(path: Path, family: str) -> Path:
    """A 2-layer, 32-wide random classifier of `family` with its own trained tokenizer."""
    build, docs = FAMILIES[family]
    tokenizer = build([text for text, _ in docs] * 4)
    torch.manual_seed(0)
    config = config_of(family, len(tokenizer))
    model = tf.AutoModelForSequenceClassification.from_config(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
