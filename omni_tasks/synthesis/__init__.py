"""Synthesis: the dataset, the streaming client, the server launcher and the simulator."""
