"""Models unlike the dycore, written the way users write them, run from their own scripts."""
