-- Each stored policy version with one policy document that was decided under it.
SELECT DISTINCT ON (policy_version) policy_version, policy FROM omni.gate_decision
