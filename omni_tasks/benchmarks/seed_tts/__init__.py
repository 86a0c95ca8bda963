"""seed-TTS (en, zh): the family (`family.py`: identity, import, judging, capabilities), its
streaming run (`run.py`: the harness's request, synthesis, transcript grades) and the audio
pipeline that grades clips while the rest synthesize (`pipeline.py`)."""
