SELECT 1 FROM omni.run WHERE source -> 'buildkite' ->> 'artifact_id' = %(artifact_id)s
