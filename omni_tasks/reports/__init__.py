"""What a night's results look like to a person: the HTML report (`html.py`), the terminal
tables (`text.py`) and the command that reproduces a stored run (`reports/reproduce.py`)."""
