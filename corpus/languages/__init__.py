"""What each of corpus.doc_lang's six languages writes on business documents."""
