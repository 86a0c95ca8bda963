"""What a night's results look like to a person: the HTML report (`html.py`) and the terminal
tables (`text.py`); the command that reproduces a run is `benchmarks/reproduce.py`'s."""
