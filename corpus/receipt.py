"""Writer of till receipts: shops, cafés, fuel stations, hotels and taxis, paid on the spot."""

from __future__ import annotations

import random

from corpus import fakes as fk

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
}


def receipt(rng: random.Random) -> str:
    """A proof of payment handed over at the counter: few lines, totals, tender, card slip."""
    kind = rng.choice(sorted(_SHOPS))
    shop = fk.party(rng)
    m, style, day = fk.money(rng), fk.date_style(rng), fk.date(rng)
    name = (
        shop.name.split(" ")[0].upper()
        + " "
        + rng.choice(
            (
                {
                    "supermarket": "MARKET",
                    "cafe": "CAFE",
                    "hardware": "DIY",
                    "fuel": "FUEL",
                    "restaurant": "RESTAURANT",
                    "hotel": "HOTEL",
                    "taxi": "TAXI",
                }[kind],
                kind.upper(),
            )
        )
    )
    lines = [name, shop.street, f"{shop.postcode} {shop.city}"]
    if rng.random() < 0.6:
        lines.append(f"Tel {shop.phone}")
    if rng.random() < 0.5:
        lines.append(f"VAT No {shop.vat_id}")
    if rng.random() < 0.5:
        lines += [
            "",
            rng.choice(
                (
                    "RECEIPT",
                    "Receipt",
                    "SALES RECEIPT",
                    "CASH RECEIPT",
                    "Till receipt",
                    "Payment receipt",
                )
            ),
        ]
    hh, mm = rng.randint(6, 22), rng.randint(0, 59)
    lines += ["", f"{day.strftime(style)} {hh:02d}:{mm:02d}"]
    if rng.random() < 0.7:
        lines.append(
            rng.choice(
                (
                    f"Till {rng.randint(1, 9)}  Cashier: {fk.person(rng).split()[0]}",
                    f"Table {rng.randint(1, 40)}  Server: {fk.person(rng).split()[0]}",
                    f"Trans #{rng.randint(1000, 99999)}  Store {rng.randint(100, 999)}",
                    f"Receipt no. {rng.randint(100000, 999999)}",
                )
            )
        )
    lines.append("-" * rng.choice((24, 32, 40)))
    total = 0.0
    n = rng.randint(1, 6) if rng.random() < 0.7 else rng.randint(7, 28)
    for _ in range(n):
        item, price = rng.choice(_SHOPS[kind])
        price = round(price * rng.uniform(0.9, 1.15), 2)
        qty = rng.choice((1, 1, 1, 2, 3)) if kind not in ("fuel", "taxi") else 1
        if kind == "fuel" and item in ("DIESEL", "UNLEADED 95"):
            litres = round(rng.uniform(15, 75), 2)
            lines.append(f"{item} {litres} L x {m(price)}")
            price, qty = round(litres * price, 2), 1
        elif qty > 1:
            lines.append(f"{qty} x {m(price)}")
        amount = round(qty * price, 2)
        total += amount
        lines.append(f"{item:<24}{m(amount):>10}")
    vat = rng.choice((7.0, 10.0, 19.0, 20.0, 21.0))
    tax = round(total - total / (1 + vat / 100), 2)
    lines.append("-" * rng.choice((24, 32, 40)))
    if rng.random() < 0.5:
        lines.append(f"{'SUBTOTAL':<24}{m(total):>10}")
    lines.append(
        f"{rng.choice(('TOTAL', 'TOTAL DUE', 'Total', 'AMOUNT', 'BALANCE')):<24}"
        f"{m(total, symbol=True):>10}"
    )
    lines.append(
        f"incl. VAT {vat:g}% {m(tax)}" if rng.random() < 0.6 else f"Tax {vat:g}%  {m(tax)}"
    )
    tender = rng.choice(("CASH", "VISA", "MASTERCARD", "DEBIT CARD", "AMEX", "CONTACTLESS"))
    if tender == "CASH":
        given = total + rng.choice((0.0, 0.5, 1.0, 5.0, 10.0, 20.0))
        lines += [f"{'CASH':<24}{m(given):>10}", f"{'CHANGE':<24}{m(given - total):>10}"]
    else:
        lines += [
            f"{tender:<24}{m(total):>10}",
            f"Card ****{rng.randint(1000, 9999)}",
            f"Auth code {rng.randint(100000, 999999)}",
        ]
        if rng.random() < 0.5:
            lines += [f"Terminal ID {rng.randint(10**7, 10**8 - 1)}", "APPROVED", "CARDHOLDER COPY"]
    lines.append("")
    lines += rng.sample(
        [
            "THANK YOU FOR YOUR VISIT",
            "Thank you for shopping with us!",
            "Please keep your receipt",
            "Returns within 30 days with receipt",
            f"Loyalty points earned: {rng.randint(1, 300)}",
            "Have a nice day",
            "www." + shop.email.split("@")[1],
            "No refund without receipt",
            "Tip not included",
            "Paid in full",
        ],
        k=rng.randint(1, 3),
    )
    return "\n".join(lines)
