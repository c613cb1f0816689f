"""What happens to a document's text between the writer and the model, drawn at random:
words lost, blocks read out of order, line breaks lost, the case changed, scan errors."""

from __future__ import annotations

import random

from corpus.layout import ocr_noise


def drop_words(rng: random.Random, text: str, share: float) -> str:
    """Each word kept with probability 1 - `share` (line breaks kept)."""
    return "\n".join(" ".join(w for w in line.split(" ") if rng.random() >= share)
                     for line in text.split("\n"))  # fmt: skip


def shuffle_blocks(rng: random.Random, text: str) -> str:
    """Blank-line separated blocks in another order, as a PDF's text layer may give them."""
    blocks = [b for b in text.split("\n\n") if b.strip()]
    rng.shuffle(blocks)
    return "\n\n".join(blocks)


def augment(rng: random.Random, text: str) -> str:
    if rng.random() < 0.25:
        text = shuffle_blocks(rng, text)
    if rng.random() < 0.3:
        text = drop_words(rng, text, rng.uniform(0.03, 0.15))
    r = rng.random()
    if r < 0.1:
        text = text.upper()
    elif r < 0.15:
        text = text.lower()
    if rng.random() < 0.15:
        text = " ".join(text.split())  # one run of words, as some extractions give
    noisy = ocr_noise(rng, text)
    return noisy if noisy.strip() else text  # a one-line text whose only line OCR missed
