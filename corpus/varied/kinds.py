"""How each kind of document words itself: titles, reference fields, opening and closing
sentences, e-mail subjects, one-paragraph versions, and the lines that cite the sale's
other documents (an invoice quoting its purchase order, a quotation asking for one).

Placeholders, filled from corpus.varied.world: {seller} {buyer} {person} {contact} {city}
{no} (this document's number) {po} {inv} {quote} {dn} (the others') {date} {due} {days}
{total} {tax}.
"""

from __future__ import annotations

from corpus.varied.kind import Kind
from corpus.varied.other_kinds import OTHER_KINDS
from corpus.varied.sale_kinds import SALE_KINDS

# In corpus.doc_type.LABELS' order: invoice, receipt, purchase_order, then quotation,
# delivery_note, contract.
KINDS: dict[str, Kind] = {**SALE_KINDS, **OTHER_KINDS}
