"""Writer of contracts: parties, recitals, numbered clauses over many pages, signature blocks.

Clauses talk about fees, invoices, purchase orders and deliveries too, so a window from the
middle of a contract must be recognised by its legal register, not by the absence of money.
"""

from __future__ import annotations

import random

from corpus import fakes as fk
from corpus.clauses import CLAUSES
from corpus.footer import company_footer
from corpus.layout import paginate

_KINDS = (
    ("SERVICES AGREEMENT", "the Services"),
    ("MASTER SERVICES AGREEMENT", "the Services"),
    ("SUPPLY AGREEMENT", "the Products"),
    ("FRAMEWORK AGREEMENT", "the Products"),
    ("CONSULTING AGREEMENT", "the Consulting Services"),
    ("SOFTWARE LICENCE AGREEMENT", "the Software"),
    ("MAINTENANCE AND SUPPORT CONTRACT", "the Support Services"),
    ("LEASE AGREEMENT", "the Premises"),
    ("NON-DISCLOSURE AGREEMENT", "the Confidential Information"),
    ("DISTRIBUTION AGREEMENT", "the Products"),
)

# Fragments of the boilerplate that lawyers add to every clause; combined, they give long
# contracts thousands of distinct sentences instead of the same few repeated.
_ACTORS = ("{a}", "{b}", "Each Party", "The receiving Party", "The defaulting Party")
_DUTIES = (
    "maintain adequate insurance cover with a reputable insurer",
    "keep complete and accurate records relating to this Agreement",
    "notify the other Party in writing of any circumstances that may delay performance",
    "use all reasonable endeavours to mitigate any loss",
    "provide such assistance as the other Party may reasonably require",
    "co-operate in good faith with the other Party and its advisers",
    "obtain and maintain all consents, licences and permissions required",
    "ensure that its personnel are suitably skilled, experienced and qualified",
    "comply with all applicable laws, regulations and codes of practice",
    "not do or omit to do anything that would damage the reputation of the other Party",
    "permit the other Party to audit its compliance on reasonable notice",
    "return or destroy all documents containing confidential information",
    "report any actual or suspected breach of security without undue delay",
    "procure that its subcontractors are bound by equivalent obligations",
)
_CONDITIONS = (
    "within {days} days of a written request",
    "at its own cost and expense",
    "in accordance with Good Industry Practice",
    "subject always to clause {ref}",
    "for the duration of this Agreement and for {years} years thereafter",
    "save as otherwise agreed in writing between the Parties",
    "to the extent permitted by applicable law",
    "during normal business hours",
    "as soon as reasonably practicable",
    "in accordance with the procedure set out in Schedule {sch}",
)
_LEADS = (
    "",
    "",
    "",
    "Without prejudice to clause {ref}, ",
    "Notwithstanding the foregoing, ",
    "For the avoidance of doubt, ",
    "Subject to clause {ref}, ",
    "Unless otherwise agreed, ",
)
_SLA = (
    "Availability",
    "Response time (P1)",
    "Response time (P2)",
    "Resolution time (P1)",
    "On-time delivery",
    "Order accuracy",
    "First-time fix rate",
    "Help desk answer time",
)


def _boilerplate(rng: random.Random) -> str:
    lead = rng.choice(_LEADS)
    actor = rng.choice(_ACTORS)
    if lead and not actor.startswith("{"):
        actor = actor[0].lower() + actor[1:]
    return f"{lead}{actor} shall {rng.choice(_DUTIES)} {rng.choice(_CONDITIONS)}."


_LAWS = (
    "England and Wales",
    "Germany",
    "the Netherlands",
    "France",
    "Ireland",
    "the State of New York",
    "Switzerland",
)


def contract(rng: random.Random) -> str:
    """A bilateral agreement with recitals, numbered clauses, schedules and signatures."""
    a, b = fk.party(rng), fk.party(rng)
    title, subj = rng.choice(_KINDS)
    style, signed = fk.date_style(rng), fk.date(rng)
    role_a, role_b = rng.choice(
        (
            ("the Supplier", "the Customer"),
            ("the Provider", "the Client"),
            ("the Licensor", "the Licensee"),
            ("the Contractor", "the Company"),
            ("the Landlord", "the Tenant"),
            ("Party A", "Party B"),
        )
    )
    values = {
        "a": role_a,
        "b": role_b,
        "subj": subj,
        "law": rng.choice(_LAWS),
    }
    lines = [title if rng.random() < 0.7 else title.title(), ""]
    lines.append(
        rng.choice(
            (
                f'This {title.title()} (the "Agreement") is made on {signed.strftime(style)}',
                f"THIS AGREEMENT is dated {signed.strftime(style)}",
                f"Contract reference: {fk.number(rng, ('C', 'CTR', 'AGR'), signed.year)}    Date: "
                f"{signed.strftime(style)}",
            )
        )
    )
    lines += ["", "BETWEEN:" if rng.random() < 0.5 else "Parties:"]
    for n, (p, role) in enumerate(((a, role_a), (b, role_b)), start=1):
        lines.append(
            f"({n}) {p.name}, a company incorporated in {p.country} with its registered office at "
            f'{p.street}, {p.postcode} {p.city} ("{role.replace("the ", "").title()}"); and'
            if n == 1
            else f"({n}) {p.name}, {p.street}, {p.postcode} {p.city}, {p.country} "
            f'("{role.replace("the ", "").title()}").'
        )
    lines += ["", "RECITALS" if rng.random() < 0.5 else "Background"]
    lines += [
        f"(A) {a.name} is in the business of providing "
        f"{rng.choice(('services', 'products', 'software', 'premises'))} "
        f"of the kind described in this Agreement.",
        f"(B) {b.name} wishes to obtain {subj} from {a.name} on the terms set out below.",
        "NOW, THEREFORE, the Parties agree as follows:"
        if rng.random() < 0.5
        else "IT IS AGREED as follows:",
        "",
    ]
    # Most contracts are long; a few are one-page letters of agreement.
    r = rng.random()
    if r < 0.08:
        n_clauses, depth, extra = rng.randint(3, 5), 1, 0
    elif r < 0.45:
        n_clauses, depth, extra = rng.randint(6, 12), rng.randint(1, 3), rng.randint(0, 2)
    else:
        n_clauses, depth, extra = rng.randint(12, 17), rng.randint(2, 5), rng.randint(1, 8)
        if rng.random() < 0.1:
            extra = rng.randint(9, 16)  # the occasional master agreement that runs to 20 pages
    clauses = sorted(rng.sample(range(len(CLAUSES)), k=min(n_clauses, len(CLAUSES))))
    for num, idx in enumerate(clauses, start=1):
        heading, sentences = CLAUSES[idx]
        lines.append(f"{num}. {heading.upper() if rng.random() < 0.5 else heading}")
        k = min(len(sentences), rng.randint(1, depth + 1))
        body = rng.sample(sentences, k=k) + [
            _boilerplate(rng) for _ in range(rng.randint(0, extra))
        ]
        for sub, sentence in enumerate(body, start=1):
            text = sentence.format(
                **values,
                sch=rng.randint(1, 4),
                months=rng.choice((12, 24, 36)),
                days=rng.choice((14, 30, 60)),
                notice=rng.choice((30, 60, 90)),
                pct=rng.choice(("four", "five", "eight")),
                years=rng.choice((2, 3, 5)),
                ref=f"{rng.randint(1, n_clauses)}.{rng.randint(1, 3)}",
            )
            lines.append(f"{num}.{sub} {text[0].upper()}{text[1:]}")
        lines.append("")
    if n_clauses > 8 and rng.random() < 0.6:
        lines += [f"SCHEDULE 1 - {subj.replace('the ', '').upper()}", ""]
        lines += [f"{i}. {fk.schedule_line(rng)}" for i in range(1, rng.randint(4, 20))]
        lines.append("")
    if extra > 3 and rng.random() < 0.6:
        lines += ["SCHEDULE 2 - SERVICE LEVELS", ""]
        lines += [
            f"{kpi}: target "
            f"{rng.choice(('99.5%', '99.9%', '4 hours', '1 business day', '98%', '95%'))}, "
            f"measured {rng.choice(('monthly', 'quarterly', 'per incident'))}; service credit "
            f"{rng.randint(1, 10)}% of the monthly fee per breach."
            for kpi in rng.sample(_SLA, k=rng.randint(3, len(_SLA)))
        ]
        lines.append("")
    lines.append(
        rng.choice(
            (
                "IN WITNESS WHEREOF the Parties have executed this Agreement on the date first "
                "written above.",
                "Signed by the duly authorised representatives of the Parties:",
                "AS WITNESS the hands of the Parties:",
            )
        )
    )
    for p in (a, b):
        lines += [
            "",
            f"For and on behalf of {p.name}",
            "Signature: ______________________",
            f"Name: {fk.person(rng)}",
            "Title: "
            f"{rng.choice(('Director', 'CEO', 'Managing Director', 'CFO', 'Head of Procurement'))}",
            "Date: ______________",
        ]
    header = rng.choice((title.title(), f"{title.title()} - {a.name} / {b.name}", "CONFIDENTIAL"))
    # Contracts printed on one party's paper carry its footer (bank details too, at times).
    footer = company_footer(rng, a, bank=0.4) if rng.random() < 0.3 else []
    return "\n".join(paginate(rng, lines, header, rng.randint(40, 60), footer))
