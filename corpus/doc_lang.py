"""Seeded synthetic business correspondence in six languages: the `doc-lang` model's data.

A European company receives invoices, reminders, order confirmations and letters in the
languages of its suppliers; `doc-lang` routes each document to the team (or the model)
for its language. The documents are made hard the way real ones are: company names,
addresses, SKUs, IBANs and numbers carry no language; line items are often in English
whatever the document's language; a share of documents ends with an English legal
footer; and OCR noise garbles words. The label is the language the document is written
in, not the language of its boilerplate.

    python -m corpus.doc_lang --n 12 --seed 7 --out /tmp/lang/
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

from corpus import fakes as fk
from corpus.doc_type import LabelledDocument
from corpus.layout import ocr_noise, paginate, party_block, table

# The model's label order (logit i is LANGUAGES[i]); never reorder, only append.
LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it", "nl")


@dataclass(frozen=True)
class Phrases:
    """What one language writes on business documents."""

    months: tuple[str, ...]
    invoice: tuple[str, ...]
    reminder: tuple[str, ...]
    confirmation: tuple[str, ...]
    letter: tuple[str, ...]
    fields: dict[str, str]  # number, date, due, customer, total, net, vat, page, subject
    columns: tuple[str, str, str, str]  # description, quantity, unit price, amount
    greetings: tuple[str, ...]
    closings: tuple[str, ...]
    invoice_lines: tuple[str, ...]
    reminder_lines: tuple[str, ...]
    confirmation_lines: tuple[str, ...]
    letter_lines: tuple[str, ...]
    items: tuple[str, ...]


_EN = Phrases(
    months=(
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ),
    invoice=("Invoice", "Tax Invoice", "INVOICE", "Sales Invoice"),
    reminder=("Payment Reminder", "Overdue Notice", "Final Reminder", "Statement of Account"),
    confirmation=("Order Confirmation", "Acknowledgement of Order", "Sales Order"),
    letter=("Re: your enquiry", "Notice of price adjustment", "Change of bank details"),
    fields={
        "number": "Number",
        "date": "Date",
        "due": "Due date",
        "customer": "Customer no.",
        "total": "Total amount",
        "net": "Net amount",
        "vat": "VAT",
        "page": "Page",
        "subject": "Subject",
    },
    columns=("Description", "Quantity", "Unit price", "Amount"),
    greetings=(
        "Dear Sir or Madam,",
        "Dear {contact},",
        "Hello {contact},",
        "To whom it may concern,",
    ),
    closings=("Kind regards,", "Yours faithfully,", "Best regards,", "Sincerely,"),
    invoice_lines=(
        "Please transfer the amount due within {days} days to the account below.",
        "Thank you for your order. We are pleased to invoice you as follows.",
        "Payment is due without deduction within {days} days of the invoice date.",
        "Please quote the invoice number with your payment.",
        "Goods remain our property until payment has been received in full.",
    ),
    reminder_lines=(
        "According to our records, the invoice below is still outstanding.",
        "We kindly ask you to settle the overdue amount within {days} days.",
        "If you have already paid, please disregard this reminder.",
        "Should payment not be received, we will have to charge interest on arrears.",
        "Please contact our accounts department if you have any questions.",
    ),
    confirmation_lines=(
        "Thank you for your order, which we confirm as follows.",
        "The goods will be dispatched in the week of {date}.",
        "Please check this confirmation and let us know of any discrepancies at once.",
        "Delivery is made according to our general terms and conditions.",
    ),
    letter_lines=(
        "We would like to inform you that our prices will change from {date}.",
        "Please note that our bank details have changed with immediate effect.",
        "We thank you for your enquiry and are happy to send you the requested documents.",
        "We look forward to continuing our successful cooperation.",
        "Should you have any questions, please do not hesitate to contact us.",
    ),
    items=(
        "Consulting services",
        "Maintenance contract, annual fee",
        "Freight charges",
        "Installation on site",
        "Spare parts kit",
        "Software licence, 12 months",
    ),
)

_DE = Phrases(
    months=(
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ),
    invoice=("Rechnung", "RECHNUNG", "Rechnung Nr.", "Schlussrechnung"),
    reminder=("Zahlungserinnerung", "Mahnung", "Letzte Mahnung", "Kontoauszug"),
    confirmation=("Auftragsbestätigung", "Bestellbestätigung", "AUFTRAGSBESTÄTIGUNG"),
    letter=("Ihre Anfrage", "Preisanpassung", "Änderung unserer Bankverbindung"),
    fields={
        "number": "Nummer",
        "date": "Datum",
        "due": "Fällig am",
        "customer": "Kundennummer",
        "total": "Gesamtbetrag",
        "net": "Nettobetrag",
        "vat": "MwSt.",
        "page": "Seite",
        "subject": "Betreff",
    },
    columns=("Bezeichnung", "Menge", "Einzelpreis", "Betrag"),
    greetings=(
        "Sehr geehrte Damen und Herren,",
        "Sehr geehrte/r {contact},",
        "Guten Tag {contact},",
    ),
    closings=("Mit freundlichen Grüßen", "Freundliche Grüße", "Hochachtungsvoll"),
    invoice_lines=(
        "Bitte überweisen Sie den Rechnungsbetrag innerhalb von {days} Tagen auf unser Konto.",
        "Vielen Dank für Ihren Auftrag. Wir erlauben uns, Ihnen Folgendes zu berechnen.",
        "Zahlbar innerhalb von {days} Tagen ohne Abzug.",
        "Bitte geben Sie bei der Zahlung die Rechnungsnummer an.",
        "Die Ware bleibt bis zur vollständigen Bezahlung unser Eigentum.",
    ),
    reminder_lines=(
        "Laut unserer Buchhaltung ist die folgende Rechnung noch offen.",
        "Wir bitten Sie, den fälligen Betrag innerhalb von {days} Tagen zu begleichen.",
        "Sollten Sie bereits gezahlt haben, betrachten Sie dieses Schreiben als gegenstandslos.",
        "Bei weiterem Zahlungsverzug müssen wir Verzugszinsen berechnen.",
        "Bei Fragen wenden Sie sich bitte an unsere Buchhaltung.",
    ),
    confirmation_lines=(
        "Vielen Dank für Ihre Bestellung, die wir wie folgt bestätigen.",
        "Die Lieferung erfolgt voraussichtlich in der Woche vom {date}.",
        "Bitte prüfen Sie diese Bestätigung und teilen Sie uns Abweichungen umgehend mit.",
        "Es gelten unsere Allgemeinen Geschäftsbedingungen.",
    ),
    letter_lines=(
        "Wir möchten Sie darüber informieren, dass sich unsere Preise ab dem {date} ändern.",
        "Bitte beachten Sie, dass sich unsere Bankverbindung mit sofortiger Wirkung ändert.",
        "Wir danken für Ihre Anfrage und senden Ihnen gerne die gewünschten Unterlagen.",
        "Wir freuen uns auf die weitere gute Zusammenarbeit.",
        "Für Rückfragen stehen wir Ihnen jederzeit gerne zur Verfügung.",
    ),
    items=(
        "Beratungsleistungen",
        "Wartungsvertrag, Jahresgebühr",
        "Frachtkosten",
        "Montage vor Ort",
        "Ersatzteilsatz",
        "Softwarelizenz, 12 Monate",
    ),
)

_FR = Phrases(
    months=(
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ),
    invoice=("Facture", "FACTURE", "Facture n°", "Facture d'acompte"),
    reminder=("Relance de paiement", "Rappel", "Mise en demeure", "Relevé de compte"),
    confirmation=("Confirmation de commande", "Accusé de réception de commande", "Bon de commande"),
    letter=("Votre demande", "Ajustement de nos tarifs", "Changement de coordonnées bancaires"),
    fields={
        "number": "Numéro",
        "date": "Date",
        "due": "Échéance",
        "customer": "N° client",
        "total": "Montant total",
        "net": "Montant HT",
        "vat": "TVA",
        "page": "Page",
        "subject": "Objet",
    },
    columns=("Désignation", "Quantité", "Prix unitaire", "Montant"),
    greetings=("Madame, Monsieur,", "Chère Madame, cher Monsieur,", "Bonjour {contact},"),
    closings=(
        "Veuillez agréer nos salutations distinguées.",
        "Cordialement,",
        "Bien cordialement,",
    ),
    invoice_lines=(
        "Merci de régler le montant dû dans un délai de {days} jours sur le compte ci-dessous.",
        "Nous vous remercions de votre commande et vous prions de trouver notre facture.",
        "Paiement à {days} jours date de facture, sans escompte.",
        "Veuillez rappeler le numéro de facture lors de votre règlement.",
        "Les marchandises restent notre propriété jusqu'au paiement intégral.",
    ),
    reminder_lines=(
        "Sauf erreur de notre part, la facture ci-dessous reste impayée.",
        "Nous vous prions de bien vouloir régler ce montant sous {days} jours.",
        "Si vous avez déjà effectué le paiement, veuillez ne pas tenir compte de ce courrier.",
        "À défaut de paiement, des pénalités de retard seront appliquées.",
        "Notre service comptable reste à votre disposition pour toute question.",
    ),
    confirmation_lines=(
        "Nous vous remercions de votre commande, que nous confirmons comme suit.",
        "La livraison est prévue pour la semaine du {date}.",
        "Merci de vérifier cette confirmation et de nous signaler toute différence.",
        "La livraison est effectuée selon nos conditions générales de vente.",
    ),
    letter_lines=(
        "Nous vous informons que nos tarifs seront modifiés à compter du {date}.",
        "Veuillez noter que nos coordonnées bancaires changent avec effet immédiat.",
        "Nous vous remercions de votre demande et vous adressons les documents souhaités.",
        "Nous nous réjouissons de poursuivre notre collaboration.",
        "Nous restons à votre disposition pour tout renseignement complémentaire.",
    ),
    items=(
        "Prestations de conseil",
        "Contrat de maintenance, redevance annuelle",
        "Frais de transport",
        "Installation sur site",
        "Kit de pièces détachées",
        "Licence logicielle, 12 mois",
    ),
)

_ES = Phrases(
    months=(
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ),
    invoice=("Factura", "FACTURA", "Factura n.º", "Factura rectificativa"),
    reminder=("Recordatorio de pago", "Aviso de vencimiento", "Último aviso", "Extracto de cuenta"),
    confirmation=("Confirmación de pedido", "Acuse de recibo del pedido", "Pedido de venta"),
    letter=("Su consulta", "Ajuste de precios", "Cambio de datos bancarios"),
    fields={
        "number": "Número",
        "date": "Fecha",
        "due": "Vencimiento",
        "customer": "N.º de cliente",
        "total": "Importe total",
        "net": "Base imponible",
        "vat": "IVA",
        "page": "Página",
        "subject": "Asunto",
    },
    columns=("Descripción", "Cantidad", "Precio unitario", "Importe"),
    greetings=("Estimados señores:", "Estimado/a {contact}:", "Buenos días, {contact}:"),
    closings=("Atentamente,", "Un cordial saludo,", "Saludos cordiales,"),
    invoice_lines=(
        "Les rogamos transfieran el importe en un plazo de {days} días a la cuenta indicada.",
        "Les agradecemos su pedido y les facturamos lo siguiente.",
        "Pago a {days} días fecha factura, sin descuento.",
        "Indiquen el número de factura al realizar el pago.",
        "La mercancía sigue siendo de nuestra propiedad hasta su pago completo.",
    ),
    reminder_lines=(
        "Según nuestros registros, la siguiente factura sigue pendiente de pago.",
        "Les rogamos abonen el importe vencido en un plazo de {days} días.",
        "Si ya han efectuado el pago, no tengan en cuenta este aviso.",
        "En caso de impago, nos veremos obligados a cobrar intereses de demora.",
        "Para cualquier consulta, contacten con nuestro departamento de contabilidad.",
    ),
    confirmation_lines=(
        "Les agradecemos su pedido, que confirmamos a continuación.",
        "La entrega está prevista para la semana del {date}.",
        "Rogamos revisen esta confirmación y nos comuniquen cualquier discrepancia.",
        "La entrega se realiza según nuestras condiciones generales de venta.",
    ),
    letter_lines=(
        "Les informamos de que nuestros precios cambiarán a partir del {date}.",
        "Tengan en cuenta que nuestros datos bancarios cambian con efecto inmediato.",
        "Les agradecemos su consulta y les enviamos con gusto la documentación solicitada.",
        "Esperamos seguir colaborando con ustedes.",
        "Quedamos a su disposición para cualquier aclaración.",
    ),
    items=(
        "Servicios de consultoría",
        "Contrato de mantenimiento, cuota anual",
        "Gastos de transporte",
        "Instalación in situ",
        "Kit de repuestos",
        "Licencia de software, 12 meses",
    ),
)

_IT = Phrases(
    months=(
        "gennaio",
        "febbraio",
        "marzo",
        "aprile",
        "maggio",
        "giugno",
        "luglio",
        "agosto",
        "settembre",
        "ottobre",
        "novembre",
        "dicembre",
    ),
    invoice=("Fattura", "FATTURA", "Fattura n.", "Fattura di acconto"),
    reminder=("Sollecito di pagamento", "Promemoria", "Ultimo sollecito", "Estratto conto"),
    confirmation=("Conferma d'ordine", "Conferma ordine", "Ordine di vendita"),
    letter=("Vostra richiesta", "Adeguamento dei prezzi", "Variazione delle coordinate bancarie"),
    fields={
        "number": "Numero",
        "date": "Data",
        "due": "Scadenza",
        "customer": "Codice cliente",
        "total": "Totale documento",
        "net": "Imponibile",
        "vat": "IVA",
        "page": "Pagina",
        "subject": "Oggetto",
    },
    columns=("Descrizione", "Quantità", "Prezzo unitario", "Importo"),
    greetings=("Spettabile Ditta,", "Gentile {contact},", "Buongiorno {contact},"),
    closings=(
        "Distinti saluti,",
        "Cordiali saluti,",
        "In attesa di un Vostro riscontro, porgiamo saluti.",
    ),
    invoice_lines=(
        "Vi preghiamo di effettuare il bonifico entro {days} giorni sul conto indicato.",
        "Vi ringraziamo per l'ordine e Vi addebitiamo quanto segue.",
        "Pagamento a {days} giorni data fattura.",
        "Si prega di indicare il numero della fattura nella causale del pagamento.",
        "La merce resta di nostra proprietà fino al completo pagamento.",
    ),
    reminder_lines=(
        "Dai nostri controlli risulta ancora aperta la seguente fattura.",
        "Vi preghiamo di saldare l'importo scaduto entro {days} giorni.",
        "Qualora abbiate già provveduto al pagamento, Vi preghiamo di non considerare la presente.",
        "In mancanza di pagamento saremo costretti ad addebitare gli interessi di mora.",
        "Il nostro ufficio contabilità resta a disposizione per qualsiasi chiarimento.",
    ),
    confirmation_lines=(
        "Vi ringraziamo per il Vostro ordine, che confermiamo come segue.",
        "La consegna è prevista per la settimana del {date}.",
        "Vi preghiamo di verificare la presente conferma e di segnalarci eventuali differenze.",
        "La fornitura avviene secondo le nostre condizioni generali di vendita.",
    ),
    letter_lines=(
        "Vi informiamo che i nostri prezzi subiranno una variazione a partire dal {date}.",
        "Vi comunichiamo che le nostre coordinate bancarie sono cambiate con effetto immediato.",
        "Vi ringraziamo per la richiesta e Vi inviamo volentieri la documentazione.",
        "Restiamo in attesa di proseguire la nostra collaborazione.",
        "Per qualsiasi chiarimento restiamo a Vostra disposizione.",
    ),
    items=(
        "Servizi di consulenza",
        "Contratto di manutenzione, canone annuo",
        "Spese di trasporto",
        "Installazione in loco",
        "Kit ricambi",
        "Licenza software, 12 mesi",
    ),
)

_NL = Phrases(
    months=(
        "januari",
        "februari",
        "maart",
        "april",
        "mei",
        "juni",
        "juli",
        "augustus",
        "september",
        "oktober",
        "november",
        "december",
    ),
    invoice=("Factuur", "FACTUUR", "Factuur nr.", "Eindfactuur"),
    reminder=("Betalingsherinnering", "Aanmaning", "Laatste herinnering", "Rekeningoverzicht"),
    confirmation=("Orderbevestiging", "Bevestiging van uw bestelling", "Verkooporder"),
    letter=("Uw aanvraag", "Prijsaanpassing", "Wijziging van onze bankgegevens"),
    fields={
        "number": "Nummer",
        "date": "Datum",
        "due": "Vervaldatum",
        "customer": "Klantnummer",
        "total": "Totaalbedrag",
        "net": "Bedrag excl. btw",
        "vat": "btw",
        "page": "Pagina",
        "subject": "Onderwerp",
    },
    columns=("Omschrijving", "Aantal", "Prijs per stuk", "Bedrag"),
    greetings=("Geachte heer, mevrouw,", "Beste {contact},", "Geachte {contact},"),
    closings=("Met vriendelijke groet,", "Hoogachtend,", "Met vriendelijke groeten,"),
    invoice_lines=(
        "Wij verzoeken u het verschuldigde bedrag binnen {days} dagen over te maken.",
        "Hartelijk dank voor uw opdracht. Wij brengen u het volgende in rekening.",
        "Betaling binnen {days} dagen na factuurdatum zonder aftrek.",
        "Vermeld bij betaling altijd het factuurnummer.",
        "De goederen blijven ons eigendom tot volledige betaling.",
    ),
    reminder_lines=(
        "Volgens onze administratie staat de onderstaande factuur nog open.",
        "Wij verzoeken u het openstaande bedrag binnen {days} dagen te voldoen.",
        "Indien u inmiddels heeft betaald, kunt u deze herinnering als niet verzonden beschouwen.",
        "Bij uitblijven van betaling zijn wij genoodzaakt wettelijke rente in rekening te brengen.",
        "Voor vragen kunt u contact opnemen met onze financiële administratie.",
    ),
    confirmation_lines=(
        "Hartelijk dank voor uw bestelling, die wij als volgt bevestigen.",
        "De levering is gepland in de week van {date}.",
        "Controleer deze bevestiging en meld eventuele afwijkingen direct.",
        "Levering geschiedt volgens onze algemene voorwaarden.",
    ),
    letter_lines=(
        "Wij willen u laten weten dat onze prijzen per {date} wijzigen.",
        "Let op: onze bankgegevens zijn met onmiddellijke ingang gewijzigd.",
        "Wij danken u voor uw aanvraag en sturen u graag de gevraagde documenten.",
        "Wij kijken uit naar een voortzetting van onze prettige samenwerking.",
        "Voor vragen staan wij u graag te woord.",
    ),
    items=(
        "Adviesdiensten",
        "Onderhoudscontract, jaarlijkse vergoeding",
        "Vrachtkosten",
        "Installatie op locatie",
        "Set reserveonderdelen",
        "Softwarelicentie, 12 maanden",
    ),
)

PHRASES: dict[str, Phrases] = {
    "en": _EN,
    "de": _DE,
    "fr": _FR,
    "es": _ES,
    "it": _IT,
    "nl": _NL,
}
# An English legal footer that suppliers print whatever the document's language.
_ENGLISH_FOOTERS = (
    "Registered office: {city}. Company registered in {country}. VAT {vat}.",
    "This document was generated electronically and is valid without signature.",
    "Please consider the environment before printing this document.",
)


def _date(p: Phrases, d: dt.date, numeric: bool) -> str:
    if numeric:
        return d.strftime("%d.%m.%Y" if p is not _EN else "%d/%m/%Y")
    return f"{d.day} {p.months[d.month - 1]} {d.year}"


def _body(rng: random.Random, p: Phrases, kind: str, days: int, date: str) -> list[str]:
    bank = {
        "invoice": p.invoice_lines,
        "reminder": p.reminder_lines,
        "confirmation": p.confirmation_lines,
        "letter": p.letter_lines,
    }[kind]
    picked = rng.sample(bank, k=rng.randint(3, len(bank)))
    return [line.format(days=days, date=date) for line in picked]


def write(rng: random.Random, language: str) -> str:
    """One document written in `language`: an invoice, reminder, order confirmation or letter."""
    p = PHRASES[language]
    sender, recipient = fk.party(rng), fk.party(rng)
    m, issued = fk.money(rng), fk.date(rng)
    numeric = rng.random() < 0.5
    kind = rng.choice(("invoice", "invoice", "reminder", "confirmation", "letter"))
    title = rng.choice(
        {"invoice": p.invoice, "reminder": p.reminder, "confirmation": p.confirmation,
         "letter": p.letter}[kind]
    )  # fmt: skip
    no = fk.number(rng, ("INV", "RE", "F", "AB", "OC", "SO"), issued.year)
    days = rng.choice((7, 10, 14, 30))
    f = p.fields
    lines = [*sender.address_lines(), ""]
    lines += party_block(rng, recipient)
    lines += [
        "",
        f"{f['date']}: {_date(p, issued, numeric)}",
        f"{f['number']}: {no}",
    ]
    if rng.random() < 0.5:
        lines.append(f"{f['customer']}: {rng.randint(10000, 99999)}")
    lines += ["", f"{f['subject']}: {title}" if kind == "letter" else title, ""]
    contact = recipient.contact
    lines += [rng.choice(p.greetings).format(contact=contact), ""]
    due = _date(p, issued + dt.timedelta(days=days), numeric)
    lines += _body(rng, p, kind, days, due)
    if kind != "letter" or rng.random() < 0.3:
        # Line items: in the document's language, or the supplier's English catalogue.
        english = rng.random() < 0.25
        r = rng.random()
        n = (
            rng.randint(1, 6)
            if r < 0.8
            else rng.randint(7, 16)
            if r < 0.97
            else rng.randint(16, 30)
        )
        items = fk.line_items(rng, n)
        rows = []
        for i in items:
            text = i.description if english else rng.choice(p.items)
            rows.append((f"{i.sku} {text}", str(i.quantity), m(i.unit_price), m(i.amount)))
        lines += ["", *table(rng, p.columns, rows), ""]
        net = sum(i.amount for i in items)
        vat = rng.choice(fk.VAT_RATES)
        lines += [
            f"{f['net']}: {m(net)} {m.code}",
            f"{f['vat']} {vat:g}%: {m(net * vat / 100)} {m.code}",
            f"{f['total']}: {m(net * (1 + vat / 100), symbol=True)}",
        ]
        if kind in ("invoice", "reminder"):
            lines.append(f"{f['due']}: {due}")
    lines += ["", rng.choice(p.closings), sender.contact, sender.name]
    if rng.random() < 0.5:
        lines.append(f"IBAN: {fk.iban(rng)}")
    if rng.random() < 0.25:
        footer = rng.choice(_ENGLISH_FOOTERS)
        lines += ["", footer.format(city=sender.city, country=sender.country, vat=sender.vat_id)]
    return "\n".join(paginate(rng, lines, f"{title} {no}", rng.randint(45, 70)))


def document(seed: int, i: int, language: str) -> LabelledDocument:
    """The `i`-th document of a seed, written in `language`; depends on nothing else."""
    rng = random.Random(f"docq-lang:{seed}:{i}")
    return LabelledDocument(
        id=f"lang-{seed}-{i:06d}", text=ocr_noise(rng, write(rng, language)), label=language
    )


def generate(n: int, seed: int) -> list[LabelledDocument]:
    """`n` documents with balanced languages (counts differ by at most one), the same for a seed."""
    if n < 0:
        raise ValueError("n must be >= 0")
    labels = [LANGUAGES[i % len(LANGUAGES)] for i in range(n)]
    random.Random(f"docq-lang-labels:{seed}").shuffle(labels)
    return [document(seed, i, label) for i, label in enumerate(labels)]


def main(argv: list[str] | None = None) -> None:
    """Write `n` documents as `<id>.txt` files (the file name is the document id)."""
    parser = argparse.ArgumentParser(
        prog="python -m corpus.doc_lang", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, default=12, help="number of documents")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument("--out", type=Path, required=True, help="folder for the .txt files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for doc in generate(args.n, args.seed):
        (args.out / f"{doc.id}.txt").write_text(doc.text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
