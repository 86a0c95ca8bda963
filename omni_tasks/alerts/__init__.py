"""Alerts: Block Kit messages (blocks), the alert lifecycle (lifecycle), delivery (slack)."""
