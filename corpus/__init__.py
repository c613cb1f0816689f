"""Seeded synthetic business documents: the demo models' data and the bench corpus."""
