"""extract_isolated: for now extract() in this process; the warm child pool comes next."""

from docq.extract.dispatch import extract as extract_isolated

__all__ = ["extract_isolated"]
