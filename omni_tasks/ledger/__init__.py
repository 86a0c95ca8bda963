"""The standing-failure ledger: which items of a series are broken night after night, in which
mode, since when, where else, and which commit fixed them (computed from stored item rows)."""
