"""What a night's results look like to a person: the HTML report (`html.py`) and the terminal
tables (`text.py`); the command that reproduces a stored run is its family's
(`benchmarks/reproduce.py`)."""
