"""verify and doctor: look, never repair."""
