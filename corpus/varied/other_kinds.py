"""How quotations, delivery notes and contracts word themselves (corpus.varied.kinds says what
the fields and their placeholders are)."""

from __future__ import annotations

from corpus.varied.kind import Kind

OTHER_KINDS: dict[str, Kind] = {
    "quotation": Kind(
        titles=(
            "QUOTATION",
            "Quotation",
            "Quote",
            "ESTIMATE",
            "Estimate",
            "Price quote",
            "Proposal",
            "Offer",
            "Pro forma quote",
            "Tender",
            "Price offer",
            "Cost estimate",
            "",
            "",
            "",
        ),
        fields=(
            (
                "Quote #{no}",
                "Quotation no. {no}",
                "Estimate {no}",
                "Offer ref. {no}",
                "Proposal {no}",
                "Our ref: {no}",
            ),
            ("Date: {date}", "Quoted on {date}", "Issued {date}"),
            (
                "Valid until: {due}",
                "Valid for {days} days",
                "Expires {due}",
                "Offer valid to {due}",
                "Price validity: {days} days",
            ),
            ("Prepared for: {buyer}", "Customer: {buyer}", "For: {buyer}", "Attn: {person}"),
            (
                "Lead time: {weeks} weeks",
                "Delivery: {weeks} weeks from order",
                "Start date: on acceptance",
            ),
        ),
        intros=(
            "Thank you for your enquiry. We are pleased to quote as follows.",
            "Further to your request, here is our price.",
            "As discussed, please find our estimate below.",
            "We are happy to offer the following.",
            "In reply to your request for quotation, we can supply:",
            "Here's what the job would cost:",
            "Our proposal for the work is set out below.",
        ),
        closings=(
            "This quote is valid for {days} days.",
            "To accept, sign below or send us your purchase order.",
            "Prices may change after {due}.",
            "We look forward to your order.",
            "This is an estimate; the final price may vary.",
            "Just reply to this email to go ahead and we'll book you in.",
            "Please let us know if you would like to proceed.",
            "A deposit of 30% is required on acceptance.",
            "Accepted by: ____________ Date: ______",
        ),
        subjects=(
            "Quote {no}",
            "Your quotation from {seller}",
            "RE: price request",
            "Estimate for {item}",
            "Proposal for {buyer}",
            "Our offer {no}",
            "RE: enquiry - pricing",
        ),
        prose=(
            "We are pleased to offer {qty} x {item} at {price} each, {total} in all excluding "
            "{tax}; the offer is valid for {days} days and delivery is {weeks} weeks after "
            "receipt of your purchase order.",
            "For the work you described we estimate {total}. This price holds until {due}. "
            "If you are happy to proceed, send us your order and we will schedule it.",
            "Our proposal: {item}, {total} all in, valid {days} days. Reply to accept.",
        ),
        cites=(
            "Your enquiry of {date}",
            "Re your RFQ {acct}",
            "On receipt of your purchase order we will confirm the delivery date.",
            "Invoiced on delivery; payment 30 days.",
        ),
        totals=(
            "Total",
            "Quoted total",
            "Estimated total",
            "Offer total",
            "Total price",
            "Estimate total",
        ),
        priced=0.95,
    ),
    "delivery_note": Kind(
        titles=(
            "DELIVERY NOTE",
            "Delivery note",
            "Packing slip",
            "PACKING LIST",
            "Despatch note",
            "Dispatch advice",
            "Goods delivery note",
            "Delivery docket",
            "Shipping note",
            "Delivery receipt",
            "Consignment note",
            "",
            "",
            "",
        ),
        fields=(
            (
                "Delivery note no. {no}",
                "DN {no}",
                "Despatch no. {no}",
                "Shipment {no}",
                "Docket {no}",
                "Packing slip #{no}",
            ),
            ("Dispatched: {date}", "Ship date: {date}", "Delivered: {date}", "Date: {date}"),
            ("Your order: {po}", "Customer PO: {po}", "Order ref {po}", "Order #{po}"),
            ("Deliver to: {buyer}, {city}", "Ship to: {buyer}", "Consignee: {buyer}"),
            (
                "Carrier: {carrier}",
                "Via {carrier}, tracking {track}",
                "Driver: {person}",
                "Vehicle reg. {acct}",
            ),
            ("Packages: {pkgs}", "{pkgs} cartons", "Pallets: {pkgs}", "Gross weight: {kg} kg"),
        ),
        intros=(
            "The following goods have been dispatched to you.",
            "Please find enclosed the items listed below.",
            "Your order has shipped.",
            "Goods delivered as follows:",
            "Contents of this shipment:",
            "We have despatched the following today.",
        ),
        closings=(
            "Received in good condition: __________ Signature",
            "Please check the goods on arrival and report any damage within 48 hours.",
            "Backordered items will follow separately.",
            "Signed for by: __________ Date: ______",
            "No prices shown. The invoice will follow by post.",
            "Driver signature ______ Customer signature ______",
            "Keep this note with the goods.",
            "Count the packages before signing for them.",
        ),
        subjects=(
            "Your order has shipped",
            "Dispatch confirmation for order {po}",
            "Delivery of order {po}",
            "Shipping notification {no}",
            "Your parcel is on its way",
        ),
        prose=(
            "Delivered today to {buyer}, {city}: {qty} x {item}, in {pkgs} packages, against "
            "your order {po}; please sign below to confirm receipt in good condition.",
            "We have shipped {qty} {item} for order {po} with {carrier}, tracking {track}. The "
            "rest follows next week. The invoice will be sent separately.",
            "Goods received by {person} on {date}: {qty} x {item}. Condition: good. Signed.",
        ),
        cites=(
            "Invoice {inv} to follow.",
            "Against invoice {inv}",
            "Ref. purchase order {po}",
            "Please quote delivery note {no} on any query.",
        ),
        totals=("Total packages", "Total items", "Total quantity", "Items shipped"),
        priced=0.1,
    ),
    "contract": Kind(
        titles=(
            "AGREEMENT",
            "Contract",
            "SERVICE AGREEMENT",
            "Lease agreement",
            "Employment contract",
            "Terms of engagement",
            "Consultancy agreement",
            "Non-disclosure agreement",
            "Rental agreement",
            "Loan agreement",
            "Memorandum of understanding",
            "Licence agreement",
            "",
            "",
        ),
        fields=(
            ("Agreement no. {no}", "Contract ref. {no}", "Ref {no}"),
            ("Effective date: {date}", "Dated {date}", "Commencement: {date}"),
            (
                "Between {seller} and {buyer}",
                "Party A: {seller}; Party B: {buyer}",
                "Landlord: {person}; Tenant: {buyer}",
                "Employer: {seller}; Employee: {person}",
            ),
            (
                "Term: {months} months",
                "Duration: until terminated",
                "Term: {months} months, renewable",
            ),
        ),
        intros=(
            "This agreement is made on {date} between {seller} and {buyer}.",
            "The parties agree as follows.",
            "WHEREAS the parties wish to work together,",
            "By signing below, both parties accept these terms.",
            "These terms govern the services {seller} provides to {buyer}.",
        ),
        closings=(
            "Either party may terminate on {days} days' written notice.",
            "This agreement is governed by the laws of {country}.",
            "Signed for and on behalf of {seller} ________",
            "Signed: ________ (the Tenant)  ________ (the Landlord)",
            "IN WITNESS WHEREOF the parties have signed this agreement.",
            "Any dispute shall be referred to arbitration.",
            "Neither party shall disclose confidential information of the other.",
        ),
        subjects=(
            "Agreement for signature",
            "Contract {no} - please sign",
            "Signed terms of engagement",
            "Your employment contract",
        ),
        prose=(
            "{seller} and {buyer} agree that {seller} will provide {item} for {months} months "
            "from {date} for a monthly fee of {total}; either party may end the agreement on "
            "{days} days' written notice, and it is governed by the laws of {country}.",
            "This letter sets out the terms on which {person} is employed by {seller} from "
            "{date}: salary {total} per month, {days} days' notice, probation three months. "
            "Please sign and return a copy.",
            "The tenant {person} rents the flat from {seller} for {months} months at {total} "
            "per month, deposit two months' rent, and agrees to keep it in good repair.",
        ),
        cites=(
            "Orders under this agreement are placed by purchase order.",
            "Invoices are payable within {days} days.",
            "Prices are as in the supplier's quotation {quote}, which forms part of this contract.",
            "Each delivery is accompanied by a delivery note.",
        ),
        totals=("Fee", "Monthly fee", "Contract value", "Rent"),
        priced=0.0,
    ),
}
