"""The numbered clauses corpus.contract draws from: a heading and its sentences each."""

from __future__ import annotations

# (heading, sentences) - sentences use {a}/{b} for the parties and {subj} for the subject.
CLAUSES = (
    (
        "Definitions",
        (
            'In this Agreement, "Effective Date" means the date on which the last Party signs it.',
            '"Business Day" means a day other than a Saturday, Sunday or public holiday in {law}.',
            "Headings are for convenience only and do not affect the interpretation of this "
            "Agreement.",
            "References to clauses and schedules are to the clauses of and schedules to this "
            "Agreement.",
            "Words in the singular include the plural and vice versa.",
        ),
    ),
    (
        "Subject Matter",
        (
            "{a} shall provide {subj} to {b} in accordance with the terms of this Agreement.",
            "The detailed scope of {subj} is set out in Schedule {sch}.",
            "{b} may request changes to {subj} in writing; changes become binding only when "
            "agreed by both Parties.",
            "Nothing in this Agreement obliges {b} to place any minimum volume of orders.",
        ),
    ),
    (
        "Term",
        (
            "This Agreement commences on the Effective Date and continues for an initial term of "
            "{months} months.",
            "Thereafter it renews automatically for successive periods of twelve (12) months "
            "unless terminated.",
            "Either Party may give notice of non-renewal at least {notice} days before the end of "
            "the current term.",
        ),
    ),
    (
        "Fees and Payment",
        (
            "In consideration of {subj}, {b} shall pay the fees set out in Schedule {sch}.",
            "{a} shall invoice {b} monthly in arrears; each invoice is payable within {days} days "
            "of receipt.",
            "All fees are exclusive of value added tax, which {b} shall pay in addition at the "
            "applicable rate.",
            "If {b} disputes an invoice in good faith, it shall pay the undisputed portion and "
            "notify {a} promptly.",
            "Fees may be adjusted once per contract year by no more than the change in the "
            "consumer price index.",
            "Interest on late payments accrues at {pct} per cent per annum above the base rate.",
        ),
    ),
    (
        "Obligations of the Parties",
        (
            "{a} shall perform its obligations with reasonable skill, care and diligence.",
            "{b} shall provide {a} with all information and access reasonably required.",
            "Each Party shall appoint a contract manager as its single point of contact.",
            "{a} shall comply with {b}'s site rules and security policies when on {b}'s premises.",
        ),
    ),
    (
        "Confidentiality",
        (
            "Each Party shall keep confidential all information disclosed by the other Party "
            "under this Agreement.",
            "The obligations in this clause do not apply to information that is or becomes "
            "publicly available "
            "other than through a breach of this Agreement.",
            "A Party may disclose confidential information where required by law, giving the "
            "other Party prompt notice.",
            "This clause survives termination of this Agreement for a period of {years} years.",
        ),
    ),
    (
        "Intellectual Property",
        (
            "All intellectual property rights in pre-existing materials remain with the Party "
            "that owns them.",
            "{a} grants {b} a non-exclusive, non-transferable licence to use the deliverables for "
            "its internal business.",
            "Neither Party acquires any right in the trade marks of the other Party.",
        ),
    ),
    (
        "Warranties",
        (
            "Each Party warrants that it has full power and authority to enter into this "
            "Agreement.",
            "{a} warrants that {subj} will conform in all material respects to the specification "
            "for {months} months.",
            "Except as expressly stated, all warranties implied by statute or common law are "
            "excluded to the "
            "fullest extent permitted by law.",
        ),
    ),
    (
        "Limitation of Liability",
        (
            "Neither Party limits its liability for death or personal injury caused by its "
            "negligence, or for fraud.",
            "Neither Party is liable for any indirect or consequential loss, or for loss of "
            "profit or revenue.",
            "Each Party's total liability under this Agreement shall not exceed the fees paid in "
            "the "
            "{months} months preceding the claim.",
        ),
    ),
    (
        "Indemnity",
        (
            "{a} shall indemnify {b} against all claims that {subj} infringe the rights of a "
            "third party.",
            "The indemnified Party shall notify the other Party of any claim without delay and "
            "allow it to conduct the defence.",
        ),
    ),
    (
        "Termination",
        (
            "Either Party may terminate this Agreement with immediate effect by written notice if "
            "the other Party "
            "commits a material breach that is not remedied within {days} days.",
            "Either Party may terminate this Agreement if the other Party becomes insolvent or "
            "enters into liquidation.",
            "On termination, {b} shall pay all fees due up to the date of termination.",
            "Termination does not affect the rights and remedies of the Parties accrued before "
            "termination.",
        ),
    ),
    (
        "Force Majeure",
        (
            "Neither Party is in breach of this Agreement if performance is prevented by events "
            "beyond its reasonable control.",
            "If a force majeure event continues for more than {days} days, either Party may "
            "terminate by written notice.",
        ),
    ),
    (
        "Data Protection",
        (
            "Each Party shall comply with all applicable data protection laws, including the GDPR.",
            "Where {a} processes personal data on behalf of {b}, the Parties shall enter into the "
            "data processing "
            "agreement in Schedule {sch}.",
        ),
    ),
    (
        "Notices",
        (
            "Notices under this Agreement shall be in writing and delivered by hand, courier or "
            "registered post "
            "to the address stated above.",
            "A notice is deemed received on the second Business Day after posting.",
            "Notices by email are valid only if confirmed in writing.",
        ),
    ),
    (
        "Assignment and Subcontracting",
        (
            "Neither Party may assign or transfer this Agreement without the prior written "
            "consent of the other Party.",
            "{a} may subcontract parts of {subj} but remains responsible for its subcontractors.",
        ),
    ),
    (
        "General",
        (
            "This Agreement constitutes the entire agreement between the Parties and supersedes "
            "all prior arrangements.",
            "No variation of this Agreement is effective unless it is in writing and signed by "
            "both Parties.",
            "If any provision is held invalid, the remaining provisions remain in full force and "
            "effect.",
            "No failure or delay in exercising any right shall operate as a waiver of that right.",
            "This Agreement may be executed in counterparts, each of which is an original.",
        ),
    ),
    (
        "Governing Law and Jurisdiction",
        (
            "This Agreement and any dispute arising out of it are governed by the laws of {law}.",
            "The courts of {law} have exclusive jurisdiction over any dispute arising out of this "
            "Agreement.",
            "Before starting proceedings the Parties shall attempt to resolve the dispute by "
            "negotiation between senior executives.",
        ),
    ),
)
