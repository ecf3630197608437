"""Dispute bundles: a round's evidence as a zip, and the offline verifier shipped inside it."""
