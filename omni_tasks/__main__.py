from omni_tasks.cli import app

app(prog_name="omni-tasks")
