"""On-demand A/B of two commits: the sequential rule, its words, GitHub check runs."""
