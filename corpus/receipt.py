"""Writer of till receipts: shops, cafés, fuel stations, hotels and taxis, paid on the spot."""

from __future__ import annotations

import random

from corpus import fakes as fk
from corpus.footer import shop_footer
from corpus.layout import boxed

_SHOPS: dict[str, tuple[tuple[str, float], ...]] = {
    "supermarket": (
        ("MILK 1L", 1.29),
        ("BREAD WHOLEGRAIN", 2.49),
        ("BANANAS KG", 1.19),
        ("EGGS 10PK", 3.29),
        ("COFFEE 500G", 6.99),
        ("BUTTER 250G", 2.19),
        ("APPLES 1KG", 2.79),
        ("PASTA 500G", 1.09),
        ("OLIVE OIL 1L", 8.49),
        ("TOMATOES", 2.35),
        ("CHEESE GOUDA", 3.99),
        ("WATER 6X1.5L", 3.49),
    ),
    "cafe": (
        ("Cappuccino", 3.40),
        ("Latte macchiato", 3.80),
        ("Espresso", 2.20),
        ("Croissant", 2.10),
        ("Club sandwich", 7.90),
        ("Still water 0.5", 2.50),
        ("Cheesecake", 4.20),
        ("Tea", 2.80),
    ),
    "hardware": (
        ("SCREWS 4X40 100PCS", 4.95),
        ("WALL PLUGS 8MM", 3.25),
        ("DRILL BIT SET", 14.99),
        ("PAINT WHITE 2.5L", 24.90),
        ("MASKING TAPE", 3.49),
        ("LIGHT BULB LED E27", 5.99),
    ),
    "fuel": (
        ("DIESEL", 1.69),
        ("UNLEADED 95", 1.79),
        ("CAR WASH PREMIUM", 12.00),
        ("COFFEE TO GO", 2.90),
    ),
    "restaurant": (
        ("Soup of the day", 6.50),
        ("Grilled salmon", 21.00),
        ("Steak frites", 24.50),
        ("House wine 0.2", 5.80),
        ("Tiramisu", 6.90),
        ("Sparkling water 0.75", 5.20),
    ),
    "hotel": (
        ("Room 1 night", 129.0),
        ("Breakfast", 18.0),
        ("City tax", 3.5),
        ("Parking", 22.0),
        ("Minibar", 9.5),
    ),
    "taxi": (("Fare", 24.60), ("Airport surcharge", 5.00), ("Luggage", 2.00)),
    "kiosk": (
        ("DAILY PAPER", 2.20),
        ("MAGAZINE", 4.90),
        ("GUM MINT", 1.10),
        ("CRISPS 150G", 1.99),
        ("ENERGY DRINK", 2.29),
        ("AAA BATTERIES 8PK", 6.49),
        ("BUS PASS 24H", 8.80),
        ("LOTTERY TICKET", 2.00),
        ("PHONE CHARGER", 12.99),
    ),
    "pharmacy": (
        ("Ibuprofen 400mg 20", 4.95),
        ("Plasters assorted", 3.49),
        ("Hand cream 75ml", 5.25),
        ("Vitamin C 60 tabs", 7.90),
        ("Sun lotion SPF30", 11.50),
    ),
}


_KIND_WORD = {
    "supermarket": "MARKET",
    "cafe": "CAFE",
    "hardware": "DIY",
    "fuel": "FUEL",
    "restaurant": "RESTAURANT",
    "hotel": "HOTEL",
    "taxi": "TAXI",
    "kiosk": "KIOSK",
    "pharmacy": "PHARMACY",
}
_TITLES = (
    "RECEIPT",
    "Receipt",
    "SALES RECEIPT",
    "CASH RECEIPT",
    "Till receipt",
    "Payment receipt",
    "Your receipt",
    "CUSTOMER RECEIPT",
    "Sales slip",
)
_ITEM_HEADERS = (
    ("Item", "Qty", "Amount"),
    ("Description", "Qty", "Price", "Total"),
    ("Art.", "Qty", "EUR"),
    ("QTY", "ITEM", "PRICE"),
    ("Product", "Amount"),
)
_CLOSINGS = (
    "THANK YOU FOR YOUR VISIT",
    "Thank you for shopping with us!",
    "Please keep your receipt",
    "Returns within 30 days with receipt",
    "Have a nice day",
    "No refund without receipt",
    "Tip not included",
    "Paid in full",
    "See you again soon",
    "Exchange only with this receipt",
    "Thank you and goodbye",
)


def _items(rng: random.Random, kind: str, m: fk.Money) -> tuple[list[str], float]:
    """The bought items in one of the shapes tills print them, and their total."""
    # Till rolls are short: most hold a handful of items, a few a long shopping list.
    n = rng.randint(1, 4) if rng.random() < 0.4 else rng.randint(1, 8)
    n = n if rng.random() < 0.85 else rng.randint(9, 15)
    shape = rng.choice(("plain", "plain", "columns", "columns", "prefix"))
    header = rng.choice(_ITEM_HEADERS)
    lines = ["  ".join(header)] if shape == "columns" else []
    total = 0.0
    for _ in range(n):
        item, price = rng.choice(_SHOPS[kind])
        price = round(price * rng.uniform(0.9, 1.15), 2)
        qty = rng.choice((1, 1, 1, 2, 3)) if kind not in ("fuel", "taxi") else 1
        if kind == "fuel" and item in ("DIESEL", "UNLEADED 95"):
            litres = round(rng.uniform(15, 75), 2)
            lines.append(f"{item} {litres} L x {m(price)}")
            price, qty = round(litres * price, 2), 1
        amount = round(qty * price, 2)
        total += amount
        if shape == "columns" and len(header) > 2:
            cells = (
                [item, str(qty), m(price), m(amount)]
                if len(header) == 4
                else [item, str(qty), m(amount)]
            )
            lines.append("  ".join(cells) if header[0] != "QTY" else f"{qty}  {item}  {m(amount)}")
        elif shape == "prefix":
            lines.append(f"{qty} x {item:<22}{m(amount):>10}")
        else:
            if qty > 1:
                lines.append(f"{qty} x {m(price)}")
            lines.append(f"{item:<24}{m(amount):>10}")
    return lines, total


def _tax(rng: random.Random, m: fk.Money, total: float) -> list[str]:
    """The VAT included in the total: one line, or a summary by rate as many tills print."""
    vat = rng.choice((7.0, 10.0, 19.0, 20.0, 21.0))
    tax = round(total - total / (1 + vat / 100), 2)
    style = rng.random()
    if style < 0.35:
        return [f"incl. VAT {vat:g}% {m(tax)}"]
    if style < 0.55:
        return [f"{rng.choice(('Tax', 'of which VAT', 'VAT included'))} {vat:g}%  {m(tax)}"]
    rows = [(rng.choice("AB1"), vat, total - tax, tax)]
    if rng.random() < 0.4:  # a second, reduced rate on part of the basket
        part = round(total * rng.uniform(0.1, 0.5), 2)
        low = rng.choice((0.0, 5.0, 7.0, 10.0))
        low_tax = round(part - part / (1 + low / 100), 2)
        high = total - part
        high_tax = round(high - high / (1 + vat / 100), 2)
        rows = [("A", vat, high - high_tax, high_tax), ("B", low, part - low_tax, low_tax)]
    out = [rng.choice(("VAT  Rate  Net  Tax  Gross", "Code  VAT%  Net  VAT", "Tax summary"))]
    out += [f"{c}  {r:g}%  {m(net)}  {m(t)}  {m(net + t)}" for c, r, net, t in rows]
    return out


def _payment(rng: random.Random, m: fk.Money, total: float) -> list[str]:
    """How it was paid: cash and change, or the card terminal's slip."""
    tender = rng.choice(
        ("CASH", "VISA", "MASTERCARD", "DEBIT CARD", "AMEX", "CONTACTLESS", "GIROCARD", "MAESTRO")
    )
    if tender == "CASH":
        given = total + rng.choice((0.0, 0.5, 1.0, 5.0, 10.0, 20.0))
        return [f"{'CASH':<24}{m(given):>10}", f"{'CHANGE':<24}{m(given - total):>10}"]
    pan = rng.choice(("****", "************", "XXXX XXXX XXXX ")) + str(rng.randint(1000, 9999))
    lines = rng.choice(
        (
            [f"{tender:<24}{m(total):>10}", f"Card {pan}"],
            [f"Paid by {tender.lower()}  {m(total, symbol=True)}", pan],
            [
                f"{rng.choice(('Card payment', 'Payment', 'Tendered'))}: {tender}",
                f"Amount paid {m(total)}",
            ],
        )
    )
    if rng.random() < 0.6:
        lines.append(f"Auth code {rng.randint(100000, 999999)}")
    if rng.random() < 0.4:
        lines += [
            f"Terminal ID {rng.randint(10**7, 10**8 - 1)}",
            rng.choice(("APPROVED", "Transaction approved", "PIN verified")),
        ]
    if rng.random() < 0.3:
        lines.append(rng.choice(("CARDHOLDER COPY", "Customer copy", "Merchant copy")))
    return lines


def receipt(rng: random.Random) -> str:
    """A proof of payment handed over at the counter: few lines, totals, tender, card slip.

    Shapes vary as tills do: a dozen short lines, item columns with a header, a VAT summary
    by rate, a card slip, the whole roll drawn in a box.
    """
    kind = rng.choice(sorted(_SHOPS))
    shop = fk.party(rng)
    m, style, day = fk.money(rng), fk.date_style(rng), fk.date(rng)
    name = shop.name.split(" ")[0].upper() + " " + rng.choice((_KIND_WORD[kind], kind.upper()))
    name = name if rng.random() < 0.8 else shop.name.split(" ")[0].upper()
    lines = [name, shop.street, f"{shop.postcode} {shop.city}"]
    if rng.random() < 0.5:
        lines.append(f"Tel {shop.phone}")
    if rng.random() < 0.4:
        lines.append(f"VAT No {shop.vat_id}")
    if rng.random() < 0.6:
        lines += ["", rng.choice(_TITLES)]
    hh, mm = rng.randint(6, 22), rng.randint(0, 59)
    lines += ["", f"{rng.choice(('', 'Date: ', 'Date '))}{day.strftime(style)} {hh:02d}:{mm:02d}"]
    if rng.random() < 0.7:
        lines.append(
            rng.choice(
                (
                    f"Till {rng.randint(1, 9)}  Cashier: {fk.person(rng).split()[0]}",
                    f"Table {rng.randint(1, 40)}  Server: {fk.person(rng).split()[0]}",
                    f"Trans #{rng.randint(1000, 99999)}  Store {rng.randint(100, 999)}",
                    f"Receipt no. {rng.randint(100000, 999999)}",
                    f"Till/slip {rng.randint(1, 9)}/{rng.randint(1000, 99999)}",
                    f"POS {rng.randint(1, 20)}  Bon {rng.randint(1000, 9999)}",
                )
            )
        )
    rule = rng.choice(("-", "=", "*", "")) * rng.choice((24, 32, 40))
    items, total = _items(rng, kind, m)
    lines += [rule, *items, rule]
    if rng.random() < 0.4:
        lines.append(f"{'SUBTOTAL':<24}{m(total):>10}")
    lines.append(
        f"{rng.choice(('TOTAL', 'TOTAL DUE', 'Total', 'AMOUNT', 'BALANCE', 'SUM', 'To pay')):<24}"
        f"{m(total, symbol=True):>10}"
    )
    paid = _payment(rng, m, total)
    tax = _tax(rng, m, total)
    lines += [*tax, *paid] if rng.random() < 0.5 else [*paid, *tax]
    lines.append("")
    closing = [
        *_CLOSINGS,
        f"Loyalty points earned: {rng.randint(1, 300)}",
        "www." + shop.email.split("@")[1],
    ]
    lines += rng.sample(closing, k=rng.randint(1, 3))
    if rng.random() < 0.3:
        lines += ["", *shop_footer(rng, shop)]
    if rng.random() < 0.2:
        lines = boxed([ln for ln in lines if ln] if rng.random() < 0.5 else lines)
    elif rng.random() < 0.2:  # centred, as a till prints its header
        width = max(len(ln) for ln in lines)
        lines = [ln.center(width).rstrip() if len(ln) < 30 else ln for ln in lines]
    return "\n".join(lines)
