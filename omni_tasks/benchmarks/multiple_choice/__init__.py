"""Multiple choice (Daily-Omni, Video-MME): the shared family (`family.py`: the item suite,
upstream's answer rule, import and judging) and one module per benchmark, its layout, demo set
and request."""
