"""The simulator: a studio's day as a feed, its strategies, and the operator's wallet file for it."""
