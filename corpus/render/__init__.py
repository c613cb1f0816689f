"""The demo corpus drawn as the files users send: PDFs with a text layer, scanned pages
(rasterised, skewed, noisy, no text layer), DOCX and HTML, in templates the demo model
never trained on. `python -m corpus.render --help` writes them."""
