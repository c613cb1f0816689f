"""Boilerplate prose that long commercial documents append: terms of sale and purchase, scopes.

A purchase order with its general terms of purchase attached runs to several pages of
legal prose, as does a contract; the wording (buyer/supplier, order, goods) is what keeps
those pages distinguishable from a contract's clauses.
"""

from __future__ import annotations

import random

_PURCHASE = (
    "The Supplier shall deliver the goods on the delivery date stated in the purchase order. "
    "Delivery dates are binding.",
    "If the Supplier expects a delay, it shall inform the Buyer in writing without undue delay, "
    "stating the reasons and the expected duration.",
    "Each delivery shall be accompanied by a delivery note stating the purchase order number, "
    "the item codes and the quantities delivered.",
    "Invoices shall be sent separately for each purchase order and shall quote the order number; "
    "invoices without an order number may be returned unpaid.",
    "The Buyer may inspect the goods within {days} days of receipt. Hidden defects may be "
    "notified as soon as they are discovered.",
    "Risk passes to the Buyer on delivery of the goods to the delivery address named in the order.",
    "Prices stated in the purchase order are fixed and include packaging and transport unless "
    "agreed otherwise in writing.",
    "The Supplier warrants that the goods conform to the specifications, drawings and samples "
    "referred to in the order and are free from defects for {months} months.",
    "The Buyer may cancel the order in whole or in part if the Supplier fails to deliver on time.",
    "Partial deliveries and over-deliveries require the Buyer's prior written consent.",
    "Payment is made within {days} days of receipt of both the goods and a correct invoice.",
    "The Supplier shall comply with the Buyer's supplier code of conduct and all applicable laws.",
    "Goods shall be packed so as to avoid damage in transit; packaging material shall be "
    "taken back by the Supplier on request.",
    "Orders placed by telephone are binding only when confirmed in writing by the Buyer's "
    "purchasing department.",
    "The Supplier may not subcontract the order without the Buyer's written approval.",
    "Certificates of origin and conformity shall be supplied with each shipment of goods.",
)
_PURCHASE_HEADS = (
    "Scope",
    "Orders and acceptance",
    "Delivery",
    "Delay",
    "Prices",
    "Invoicing",
    "Payment",
    "Inspection",
    "Warranty",
    "Packaging",
    "Transfer of risk",
    "Cancellation",
    "Compliance",
)

_SALE = (
    "All deliveries are made exclusively under these general terms of sale.",
    "Our quotations are subject to change and non-binding unless expressly stated otherwise.",
    "Prices are ex works plus statutory VAT; packaging and shipping are charged separately.",
    "Invoices are payable within {days} days of the invoice date without deduction.",
    "Goods remain our property until full payment of all claims arising from the business "
    "relationship.",
    "In case of late payment we charge default interest of {pct}% above the base rate.",
    "Delivery times are approximate unless a fixed date has been agreed in writing.",
    "Complaints about obvious defects must be made within {days} days of receipt of the goods.",
    "Our liability for slight negligence is excluded except for injury to life, body or health.",
    "The customer may only set off claims that are undisputed or legally established.",
    "Returns are accepted only with our prior consent and in the original packaging.",
)

_SCOPE = (
    "Phase {n}: requirements analysis with your key users, including {k} workshops on site.",
    "Phase {n}: design and configuration of the solution according to the agreed specification.",
    "Phase {n}: installation, testing and handover, including documentation.",
    "The offer includes delivery to your premises and disposal of packaging.",
    "Assumptions: access to the site during normal working hours; power and network available.",
    "Not included: civil works, permits, and any work outside the described scope.",
    "Our team consists of one project lead and {k} specialists.",
    "Optional: extended warranty of {k} years at the price stated in the table below.",
    "Training of up to {k} users is included in the price.",
    "Travel expenses are charged at cost unless a flat rate is stated.",
)


def _fill(rng: random.Random, text: str, n: int = 0) -> str:
    return text.format(
        days=rng.choice((8, 10, 14, 30)),
        months=rng.choice((12, 24, 36)),
        pct=rng.choice((5, 8, 9)),
        n=n,
        k=rng.randint(2, 6),
    )


def purchase_terms(rng: random.Random, n: int) -> list[str]:
    """General terms of purchase (buyer's side) with `n` numbered sections."""
    lines = [
        rng.choice(
            (
                "GENERAL TERMS AND CONDITIONS OF PURCHASE",
                "Terms and Conditions of Purchase",
                "Standard Purchase Terms",
                "PURCHASE ORDER TERMS AND CONDITIONS",
            )
        ),
        "",
    ]
    for s in range(1, n + 1):
        lines.append(f"{s}. {rng.choice(_PURCHASE_HEADS)}")
        for k in range(1, rng.randint(2, 4) + 1):
            lines.append(f"{s}.{k} {_fill(rng, rng.choice(_PURCHASE))}")
        lines.append("")
    return lines


def sale_terms(rng: random.Random, n: int) -> list[str]:
    """General terms of sale (seller's side) printed on invoices and quotations."""
    lines = [
        rng.choice(("General Terms of Sale", "TERMS AND CONDITIONS OF SALE", "Terms & Conditions")),
        "",
    ]
    lines += [f"{s}. {_fill(rng, rng.choice(_SALE))}" for s in range(1, n + 1)]
    return lines


def quotation_scope(rng: random.Random, n: int) -> list[str]:
    """The scope-of-work prose that service quotations put before the price table."""
    lines = [
        rng.choice(("Scope of work", "SCOPE OF SUPPLY", "Our proposal", "Description of services"))
    ]
    chosen = rng.sample(_SCOPE, k=min(n, len(_SCOPE)))
    phases = iter(range(1, n + 1))
    lines += [_fill(rng, s, n=next(phases) if "{n}" in s else 0) for s in chosen]
    return lines
