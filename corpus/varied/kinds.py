"""How each kind of document words itself: titles, reference fields, opening and closing
sentences, e-mail subjects, one-paragraph versions, and the lines that cite the sale's
other documents (an invoice quoting its purchase order, a quotation asking for one).

Placeholders, filled from corpus.varied.world: {seller} {buyer} {person} {contact} {city}
{no} (this document's number) {po} {inv} {quote} {dn} (the others') {date} {due} {days}
{total} {tax}.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    titles: tuple[str, ...]  # "" is a document without a heading
    fields: tuple[tuple[str, ...], ...]  # each a choice of wordings; some of them are printed
    intros: tuple[str, ...]
    closings: tuple[str, ...]
    subjects: tuple[str, ...]
    prose: tuple[str, ...]  # the whole document in a paragraph
    cites: tuple[str, ...]  # lines naming the sale's other documents
    totals: tuple[str, ...]  # how the sum is labelled
    priced: float  # how often the items carry prices


KINDS: dict[str, Kind] = {
    "invoice": Kind(
        titles=(
            "INVOICE",
            "Invoice",
            "TAX INVOICE",
            "Tax Invoice",
            "Bill",
            "Statement of charges",
            "Billing statement",
            "INVOICE / FACTURE",
            "Commercial invoice",
            "Final invoice",
            "Interim invoice",
            "",
            "",
            "",
        ),
        fields=(
            (
                "Invoice No: {no}",
                "Invoice #{no}",
                "Invoice number {no}",
                "Bill no. {no}",
                "Ref: {no}",
                "Document no. {no}",
                "Inv {no}",
            ),
            (
                "Invoice date: {date}",
                "Date: {date}",
                "Billed on {date}",
                "Tax point: {date}",
                "Issued: {date}",
            ),
            (
                "Due date: {due}",
                "Payment due: {due}",
                "Due: {due}",
                "Pay by {due}",
                "Terms: net {days} days",
                "Payment terms: {days} days",
            ),
            (
                "Bill to: {buyer}",
                "Customer: {buyer}",
                "Invoice to: {buyer}",
                "Sold to: {buyer}",
                "Account: {buyer}",
            ),
            ("Account no. {acct}", "Customer ID {acct}", "Client code {acct}"),
        ),
        intros=(
            "Please find below our invoice for the work carried out.",
            "Here is the bill for {seller}'s services this month.",
            "We have charged the following to your account.",
            "As agreed, we are invoicing the goods supplied to {buyer}.",
            "Thank you for your business. The amount below is now payable.",
            "Our charges for the period are listed below.",
            "This invoice covers the items delivered last week.",
            "Attached is the invoice for the completed job.",
        ),
        closings=(
            "Please pay within {days} days quoting the invoice number.",
            "Payment is due by {due}. Bank transfer to IBAN {iban}.",
            "Kindly remit {total} to the account below by {due}.",
            "Overdue amounts attract interest at 2% per month.",
            "If you have already paid, please ignore this invoice.",
            "Amount outstanding: {total}. Please settle on receipt.",
            "Make cheques payable to {seller}.",
            "Your card on file will be charged {total} on {due}.",
            "Please pay the balance due; late payment fees may apply.",
        ),
        subjects=(
            "Invoice {no}",
            "Your invoice from {seller}",
            "Invoice {no} - payment due {due}",
            "Bill for {month}",
            "Invoice for services",
            "Amount due: {total}",
        ),
        prose=(
            "{seller} invoices {buyer} the sum of {total} (including {tax}) for the goods "
            "supplied under order {po}; payment is due by {due} to IBAN {iban}, quoting "
            "invoice {no}.",
            "Please note that invoice {no} for {total} is now due. It covers the work done in "
            "{month}. Pay by bank transfer within {days} days.",
            "Bill {no}: for the services listed we charge {total}, {tax} included. Settle by "
            "{due}. Thank you.",
        ),
        cites=(
            "Your purchase order: {po}",
            "Re: PO {po}",
            "Delivery note {dn} refers.",
            "As per your order {po} and our quotation {quote}.",
            "Goods delivered on {date} (delivery note {dn}).",
            "Based on our quote {quote}, accepted on {date}.",
        ),
        totals=(
            "Amount due",
            "Total due",
            "Balance due",
            "TOTAL",
            "Invoice total",
            "Please pay",
            "Total payable",
            "Amount payable",
        ),
        priced=1.0,
    ),
    "receipt": Kind(
        titles=(
            "RECEIPT",
            "Receipt",
            "Sales receipt",
            "Payment receipt",
            "CASH RECEIPT",
            "Till receipt",
            "Official receipt",
            "Proof of payment",
            "Thank you for your order",
            "",
            "",
            "",
            "",
        ),
        fields=(
            (
                "Receipt #{no}",
                "Receipt no. {no}",
                "Trans {no}",
                "TRN {no}",
                "Ticket {no}",
                "Order #{no}",
            ),
            ("{date} {time}", "Date: {date}", "Paid on {date}", "{date}"),
            ("Cashier: {first}", "Served by {first}", "Till 3  Op {acct}", "REG 02"),
            (
                "Paid by {card} ****{last4}",
                "CASH",
                "Card: {card}",
                "Payment method: {card}",
                "CONTACTLESS {card}",
                "Paid in cash",
            ),
        ),
        intros=(
            "Thanks for shopping with us!",
            "We received your payment, thank you.",
            "Your payment has been processed.",
            "This confirms your purchase.",
            "Received with thanks from {buyer}:",
            "Payment confirmation",
        ),
        closings=(
            "Keep this receipt for your records.",
            "No refund without receipt.",
            "Returns within 28 days with this receipt.",
            "Thank you, come again!",
            "Amount paid: {total}. Balance: {zero}.",
            "This is not a tax invoice.",
            "Change due: {change}",
            "Paid in full. Nothing further is owed.",
            "Exchange or refund within 14 days on presentation of this receipt.",
        ),
        subjects=(
            "Your receipt from {seller}",
            "Payment received - thank you",
            "Receipt for your payment of {total}",
            "Your order receipt #{no}",
            "We've received your payment",
        ),
        prose=(
            "Received from {buyer} the sum of {total} in full payment of invoice {inv}, paid "
            "by bank transfer on {date}. Thank you.",
            "Receipt {no}: {person} paid {total} in cash on {date} for {item}. Received by "
            "{contact}.",
            "This confirms that we received your payment of {total} on {date} by {card}. "
            "Your account balance is now {zero}.",
        ),
        cites=(
            "Payment for invoice {inv}",
            "Order {po} paid in full",
            "Ref invoice {inv}",
            "Settles invoice {inv} dated {date}.",
        ),
        totals=("TOTAL", "Total", "Amount paid", "Paid", "TOTAL PAID", "Sale total", "Grand total"),
        priced=1.0,
    ),
    "purchase_order": Kind(
        titles=(
            "PURCHASE ORDER",
            "Purchase Order",
            "Order",
            "ORDER",
            "Official order",
            "Order form",
            "PO",
            "Purchase requisition / order",
            "Order confirmation request",
            "",
            "",
            "",
        ),
        fields=(
            (
                "PO number: {no}",
                "PO #{no}",
                "Order no. {no}",
                "Our order ref: {no}",
                "Purchase order {no}",
                "Order number {no}",
            ),
            ("Order date: {date}", "Date: {date}", "Raised: {date}"),
            (
                "Deliver by: {due}",
                "Required by {due}",
                "Delivery date: {due}",
                "Need by {due}",
                "Requested delivery: week of {due}",
            ),
            ("Supplier: {seller}", "Vendor: {seller}", "To: {seller}"),
            (
                "Ship to: {buyer}, {city}",
                "Deliver to: {buyer} goods-in, {city}",
                "Delivery address: {buyer}, {city}",
            ),
            (
                "Buyer: {person}",
                "Requested by: {person}",
                "Approved by: {person}",
                "Cost centre {acct}",
            ),
        ),
        intros=(
            "Please supply the following.",
            "We wish to order the items below.",
            "Kindly deliver the goods listed to our {city} site.",
            "Following your quotation {quote}, please accept our order for:",
            "We hereby place an order for the following:",
            "Please send us the following at your earliest convenience:",
            "Could you please ship:",
        ),
        closings=(
            "Please confirm receipt of this order and the delivery date.",
            "Quote our order number on your invoice and delivery note.",
            "Goods not on this order will be returned.",
            "Invoices without a PO number cannot be paid.",
            "Please acknowledge this order by return.",
            "Send the invoice to accounts payable once the goods are delivered.",
            "Partial deliveries are not accepted without our consent.",
        ),
        subjects=(
            "Purchase order {no}",
            "Order {no} - please confirm",
            "New order from {buyer}",
            "PO {no} for {item}",
            "Order for delivery {due}",
        ),
        prose=(
            "Please supply {qty} x {item} at {price} each, per your quotation {quote}, for "
            "delivery to {buyer} in {city} by {due}; our order number is {no} and must appear "
            "on your invoice.",
            "We order from {seller} the goods listed in your offer {quote}, total {total}, "
            "delivery by {due}. Please confirm this order.",
            "Order {no}: send {qty} {item} to our {city} warehouse by {due}. Invoice us "
            "afterwards quoting the order number.",
        ),
        cites=(
            "Ref. your quotation {quote}",
            "As per your offer {quote} of {date}",
            "Your quote no. {quote} applies.",
            "Framework agreement {ctr} applies.",
        ),
        totals=("Order total", "Total order value", "PO total", "Total", "Estimated total"),
        priced=0.85,
    ),
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
