"""The evidence behind a verdict, as people reach it: clip audio (audio.py), every URL a person
clicks (links.py) and the reports and audio served over HTTP (serving.py)."""
