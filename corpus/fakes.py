"""Fake parties, dates, money and line items that the synthetic business documents share.

Every function takes the document's own `random.Random`, so a document depends only on its
seed and never on how many documents were generated before it.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from corpus import names


@dataclass(frozen=True)
class Party:
    """A company with the details business documents print about it."""

    name: str
    street: str
    city: str
    postcode: str
    country: str
    phone: str
    email: str
    vat_id: str
    contact: str

    def address_lines(self) -> list[str]:
        return [self.name, self.street, f"{self.postcode} {self.city}", self.country]


def person(rng: random.Random) -> str:
    return f"{rng.choice(names.FIRST)} {rng.choice(names.LAST)}"


def party(rng: random.Random, trade: str | None = None) -> Party:
    """A random company; `trade` fixes its line of business when the document needs one."""
    head = rng.choice(names.NAME_HEADS) + rng.choice(names.NAME_TAILS)
    trade = trade or rng.choice(names.TRADES)
    name = (
        f"{head} {trade} {rng.choice(names.SUFFIXES)}" if rng.random() < 0.8 else f"{head} {trade}"
    )
    city, postcode, country = rng.choice(names.CITIES)
    domain = head.lower() + rng.choice((".com", ".co.uk", ".de", ".eu", ".net", ".io"))
    return Party(
        name=name,
        street=f"{rng.randint(1, 240)} {rng.choice(names.STREETS)}",
        city=city,
        postcode=postcode,
        country=country,
        phone=f"+{rng.randint(1, 49)} {rng.randint(10, 999)} {rng.randint(100000, 9999999)}",
        email=f"{rng.choice(('info', 'accounts', 'sales', 'orders', 'billing'))}@{domain}",
        vat_id=f"{names.VAT_PREFIX[country]}{rng.randint(100000000, 999999999)}",
        contact=person(rng),
    )


_DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%B %d, %Y", "%d %b %Y")


def date(rng: random.Random) -> dt.date:
    return dt.date(2019, 1, 1) + dt.timedelta(days=rng.randint(0, 6 * 365))


def date_style(rng: random.Random) -> str:
    """One date format per document: real documents are consistent within themselves."""
    return rng.choice(_DATE_FORMATS)


_CURRENCIES = (("EUR", "€"), ("USD", "$"), ("GBP", "£"), ("CHF", "CHF "))


@dataclass(frozen=True)
class Money:
    """How one document writes amounts: currency and decimal convention."""

    code: str
    symbol: str
    continental: bool  # 1.234,56 instead of 1,234.56

    def __call__(self, amount: float, symbol: bool = False) -> str:
        text = f"{amount:,.2f}"
        if self.continental:
            text = text.replace(",", "_").replace(".", ",").replace("_", ".")
        return f"{self.symbol}{text}" if symbol else text


def money(rng: random.Random) -> Money:
    code, symbol = rng.choice(_CURRENCIES)
    return Money(
        code=code, symbol=symbol, continental=code in ("EUR", "CHF") and rng.random() < 0.5
    )


VAT_RATES = (0.0, 5.0, 7.0, 10.0, 19.0, 20.0, 21.0, 23.0)

# (description, unit, typical unit price) per catalogue; prices vary around the typical one.
CATALOGUES: dict[str, tuple[tuple[str, str, float], ...]] = {
    "office": (
        ("A4 copy paper 80g, box of 5 reams", "box", 24.9),
        ("Ballpoint pens blue, pack of 50", "pk", 12.5),
        ("Toner cartridge black HP 26X", "pc", 149.0),
        ("Lever arch file A4 75mm", "pc", 3.2),
        ("Desk organiser mesh", "pc", 18.0),
        ("Sticky notes 76x76 yellow, 12 pads", "pk", 9.8),
        ("Office chair ergonomic mesh back", "pc", 289.0),
        ("Whiteboard markers assorted, 4", "set", 7.4),
        ("Shredder cross-cut P-4", "pc", 215.0),
        ("Envelopes C4 self-seal, box of 250", "box", 31.0),
    ),
    "it": (
        ('Laptop 14" i7 16GB 512GB SSD', "pc", 1249.0),
        ('27" IPS monitor USB-C', "pc", 329.0),
        ("Docking station USB-C 100W", "pc", 189.0),
        ("Wireless keyboard and mouse set", "set", 59.0),
        ("Cat6 patch cable 2m", "pc", 3.9),
        ("24-port gigabit switch managed", "pc", 412.0),
        ("SSD 1TB NVMe", "pc", 96.0),
        ("Microsoft 365 Business Standard licence (annual)", "lic", 150.0),
        ("On-site installation, per hour", "h", 95.0),
        ("UPS 1500VA rack mount", "pc", 640.0),
        ("Headset USB noise cancelling", "pc", 88.0),
        ("Server rack 42U", "pc", 1180.0),
    ),
    "industrial": (
        ("Hex bolt M10x40 DIN 933 zinc, box of 100", "box", 14.6),
        ("Ball bearing 6204-2RS", "pc", 4.1),
        ('Hydraulic hose 1/2" 2SN per metre', "m", 11.3),
        ("Pneumatic cylinder 32x100", "pc", 86.0),
        ("Stainless steel sheet 2mm 1000x2000", "pc", 212.0),
        ("Safety gloves cut level C, pair", "pr", 6.7),
        ("Cable tie 300x4.8 black, bag of 100", "bag", 5.5),
        ("Gear motor 0.75kW 3-phase", "pc", 534.0),
        ("Pallet wrap film 500mm x 300m", "roll", 17.9),
        ("Welding wire ER70S-6 1.0mm 15kg", "spool", 48.0),
        ("Proximity sensor M18 PNP", "pc", 39.5),
        ("Conveyor belt PVC per metre", "m", 73.0),
    ),
    "services": (
        ("Consulting services, senior consultant", "day", 1150.0),
        ("Project management", "day", 980.0),
        ("Software development", "h", 110.0),
        ("Workshop facilitation", "day", 1400.0),
        ("Maintenance contract, monthly fee", "month", 450.0),
        ("Cleaning of office premises", "month", 1320.0),
        ("Travel expenses (flat rate)", "lump", 350.0),
        ("Training session, up to 12 participants", "day", 1650.0),
        ("Security guard service", "h", 28.5),
        ("Translation of documents", "page", 32.0),
        ("Data migration", "lump", 4200.0),
        ("Support hours pack", "pack", 900.0),
    ),
    "food": (
        ("Coffee beans arabica 1kg", "kg", 18.9),
        ("Bottled water 0.5L, case of 24", "case", 7.2),
        ("Catering buffet per person", "pers", 24.0),
        ("Fresh fruit basket", "pc", 29.0),
        ("Milk 1L UHT, case of 12", "case", 11.4),
        ("Assorted biscuits 2kg", "box", 15.5),
        ("Sandwich platter, 20 pieces", "pc", 58.0),
        ("Orange juice 1L, case of 6", "case", 13.2),
    ),
}


@dataclass(frozen=True)
class LineItem:
    """One row of an order, invoice, quotation or delivery note."""

    sku: str
    description: str
    unit: str
    quantity: int
    unit_price: float

    @property
    def amount(self) -> float:
        return round(self.quantity * self.unit_price, 2)


def line_items(rng: random.Random, n: int, catalogue: str | None = None) -> list[LineItem]:
    """`n` line items, mostly from one catalogue (suppliers sell one kind of thing)."""
    main = catalogue or rng.choice(sorted(CATALOGUES))
    prefix = rng.choice(("ART", "SKU", "P", "IT", "MAT", "", "NO."))
    items = []
    for _ in range(n):
        cat = main if rng.random() < 0.85 else rng.choice(sorted(CATALOGUES))
        description, unit, price = rng.choice(CATALOGUES[cat])
        quantity = rng.choice((1, 1, 1, 2, 2, 3, 4, 5, 6, 10, 12, 20, 25, 50, 100))
        if price > 500:
            quantity = rng.choice((1, 1, 2, 3))
        items.append(
            LineItem(
                sku=f"{prefix}{rng.randint(10000, 999999)}",
                description=description,
                unit=unit,
                quantity=quantity,
                unit_price=round(price * rng.uniform(0.8, 1.25), 2),
            )
        )
    return items


def number(rng: random.Random, prefixes: tuple[str, ...], year: int) -> str:
    """A document number in one of the usual shapes (INV-2024-00123, 4500012345, ...)."""
    prefix = rng.choice(prefixes)
    shape = rng.random()
    if shape < 0.4:
        return f"{prefix}-{year}-{rng.randint(1, 99999):05d}"
    if shape < 0.7:
        return f"{prefix}{rng.randint(100000, 9999999)}"
    return str(rng.randint(10_000_000, 4_599_999_999))


def iban(rng: random.Random) -> str:
    digits = "".join(str(rng.randint(0, 9)) for _ in range(18))
    return f"{rng.choice(('DE', 'GB', 'FR', 'NL', 'IT', 'AT'))}{rng.randint(10, 99)} " + " ".join(
        digits[i : i + 4] for i in range(0, 18, 4)
    )


def schedule_line(rng: random.Random) -> str:
    """A priced entry of a contract schedule ("Laptop ...: 1,249.00 per pc")."""
    description, unit, price = rng.choice(CATALOGUES[rng.choice(sorted(CATALOGUES))])
    return f"{description}: {price * rng.uniform(0.8, 1.2):,.2f} per {unit}"
