"""Seeded synthetic business documents: the demo models' data, the test inputs and the bench corpus."""
