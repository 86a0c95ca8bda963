"""Grafana: dashboards as code (dashboards) and pushing them + annotations (push)."""
