"""corpus/footer.py: company footers, printed on documents of every class (issue 21)."""

from __future__ import annotations

import random

from corpus import fakes as fk
from corpus.doc_type import LABELS, generate
from corpus.footer import company_footer, shop_footer


def test_bank_details_are_not_an_invoice_giveaway() -> None:
    # Footers print IBANs on orders, offers, delivery notes and contracts too; were they on
    # invoices only, the model would learn the bank line as the class (it did, before).
    docs = generate(300, 5)
    with_iban = {d.label for d in docs if "IBAN" in d.text}
    assert with_iban >= set(LABELS) - {"receipt"}


def test_a_footer_names_its_company_and_a_registration() -> None:
    for i in range(20):
        rng = random.Random(i)
        p = fk.party(rng)
        text = " ".join(company_footer(rng, p, bank=1.0))
        assert p.name in text and p.vat_id in text and ("IBAN" in text or "Acc." in text)


def test_a_shop_footer_is_short() -> None:
    for i in range(20):
        rng = random.Random(i)
        assert 1 <= len(shop_footer(rng, fk.party(rng))) <= 4
