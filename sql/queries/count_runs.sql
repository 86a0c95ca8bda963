SELECT count(*) FROM omni.run
