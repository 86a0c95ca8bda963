"""What a night's results look like to a person: the HTML report (`html.py`), the terminal
tables (`text.py`) and the command that reproduces a stored run (`reports/reproduce.py`)."""

# Plotly's script, written once beside a folder's reports (html.write_page) and loaded by each
# page by this relative name; the evidence app serves it from the reports folder.
PLOTLY_JS = "plotly.min.js"
