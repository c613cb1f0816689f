"""The facts a varied document is written around: where it comes from (currency, tax, dates),
who the parties are, what is sold, and the numbers of the other documents of the same sale
that it may cite.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from corpus import fakes as fk


@dataclass(frozen=True)
class Locale:
    """A country's conventions as paperwork prints them."""

    code: str  # ISO currency code
    symbol: str
    tax: str  # what the sales tax is called
    rates: tuple[float, ...]
    date_format: str
    continental: bool  # 1.234,56


LOCALES = (
    Locale("USD", "$", "Sales tax", (0.0, 6.25, 7.0, 8.875), "%m/%d/%Y", False),
    Locale("GBP", "£", "VAT", (20.0, 5.0, 0.0), "%d/%m/%Y", False),
    Locale("AUD", "$", "GST", (10.0,), "%d/%m/%Y", False),
    Locale("NZD", "$", "GST", (15.0,), "%d/%m/%Y", False),
    Locale("CAD", "$", "GST/HST", (5.0, 13.0), "%Y-%m-%d", False),
    Locale("INR", "Rs.", "GST", (18.0, 12.0, 5.0), "%d-%m-%Y", False),
    Locale("EUR", "€", "VAT", (19.0, 20.0, 21.0, 22.0), "%d.%m.%Y", True),
    Locale("EUR", "EUR ", "TVA", (20.0, 10.0), "%d/%m/%Y", True),
    Locale("EUR", "€", "IVA", (21.0, 22.0, 10.0), "%d/%m/%Y", True),
    Locale("EUR", "€", "BTW", (21.0, 9.0), "%d-%m-%Y", True),
    Locale("EUR", "€", "MwSt.", (19.0, 7.0), "%d.%m.%Y", True),
    Locale("CHF", "CHF ", "MWST", (8.1,), "%d.%m.%Y", False),
    Locale("ZAR", "R", "VAT", (15.0,), "%Y/%m/%d", False),
    Locale("SGD", "S$", "GST", (9.0,), "%d %b %Y", False),
    Locale("JPY", "¥", "Consumption tax", (10.0,), "%Y/%m/%d", False),
    Locale("MXN", "$", "IVA", (16.0,), "%d/%m/%Y", False),
    Locale("AED", "AED ", "VAT", (5.0,), "%d/%m/%Y", False),
    Locale("SEK", "kr ", "Moms", (25.0,), "%Y-%m-%d", True),
)


@dataclass(frozen=True)
class Item:
    description: str
    quantity: int
    unit: str
    price: float

    @property
    def amount(self) -> float:
        return round(self.quantity * self.price, 2)


# Small things bought and sold by people and shops, beside the catalogues' trade goods.
_RETAIL = (
    ("Coffee, large", "x", 3.6), ("Sandwich, chicken", "x", 5.9), ("Milk 1L", "x", 1.2),
    ("Bread, sourdough", "x", 3.4), ("Apples 1kg", "x", 2.8), ("Screws assorted", "pk", 4.5),
    ("Paint, white 5L", "x", 32.0), ("Phone charger", "x", 14.99), ("Taxi fare", "x", 23.5),
    ("Parking 2 hours", "x", 6.0), ("Haircut", "x", 28.0), ("Printer ink", "x", 19.9),
    ("Lunch menu", "x", 12.5), ("Train ticket", "x", 41.2), ("Hotel night", "night", 119.0),
    ("Repair labour", "h", 65.0), ("Call-out charge", "x", 80.0), ("Cleaning, office", "h", 25.0),
    ("Garden maintenance", "visit", 55.0), ("Consultation", "x", 90.0),
)  # fmt: skip


@dataclass(frozen=True)
class World:
    """Everything a writer may mention; a document uses some of it."""

    locale: Locale
    seller: fk.Party
    buyer: fk.Party
    person: str
    issued: dt.date
    items: tuple[Item, ...]
    tax_rate: float
    refs: dict[str, str]  # the numbers of this document and of the sale's other documents

    def money(self, amount: float, symbol: bool = True) -> str:
        decimals = 0 if self.locale.code == "JPY" else 2
        text = f"{amount:,.{decimals}f}"
        if self.locale.continental:
            text = text.replace(",", "_").replace(".", ",").replace("_", ".")
        return f"{self.locale.symbol}{text}" if symbol else text

    def date(self, days: int = 0) -> str:
        return (self.issued + dt.timedelta(days=days)).strftime(self.locale.date_format)

    @property
    def net(self) -> float:
        return round(sum(i.amount for i in self.items), 2)

    @property
    def tax(self) -> float:
        return round(self.net * self.tax_rate / 100, 2)


def _number(rng: random.Random, prefixes: tuple[str, ...], year: int) -> str:
    prefix = rng.choice(prefixes)
    body = rng.choice((f"{year}-{rng.randint(1, 99999):05d}", str(rng.randint(1000, 9999999)),
                       f"{rng.randint(10, 99)}/{year % 100}",
                       f"{year % 100}{rng.randint(100, 9999)}"))  # fmt: skip
    return f"{prefix}{rng.choice(('-', '', ' ', '/'))}{body}" if prefix else body


REF_PREFIXES = {
    "invoice": ("INV", "IN", "RE", "F", "BL", "", "TI"),
    "receipt": ("R", "RCT", "", "TRN", "RC"),
    "purchase_order": ("PO", "P", "ORD", "", "OR", "BST"),
    "quotation": ("Q", "QT", "QUO", "EST", "", "OFF", "PR"),
    "delivery_note": ("DN", "DEL", "SHP", "", "LS", "DSP"),
    "contract": ("AGR", "C", "CTR", "", "K"),
}


def world(rng: random.Random) -> World:
    locale = rng.choice(LOCALES)
    year = fk.date(rng).year
    if rng.random() < 0.75:
        entries = fk.line_items(rng, rng.choice((1, 1, 2, 2, 3, 4, 5, 6, 8, 12, 18, 30)))
        items = tuple(Item(i.description, i.quantity, i.unit, i.unit_price) for i in entries)
    else:
        picks = rng.sample(_RETAIL, rng.randint(1, 6))
        items = tuple(Item(d, rng.choice((1, 1, 1, 2, 3)), u, round(p * rng.uniform(0.7, 1.4), 2))
                      for d, u, p in picks)  # fmt: skip
    refs = {label: _number(rng, prefixes, year) for label, prefixes in REF_PREFIXES.items()}
    return World(
        locale=locale,
        seller=fk.party(rng),
        buyer=fk.party(rng),
        person=fk.person(rng),
        issued=fk.date(rng),
        items=items,
        tax_rate=rng.choice(locale.rates),
        refs=refs,
    )
