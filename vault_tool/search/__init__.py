"""The Whoosh cache and the ranking maths."""
