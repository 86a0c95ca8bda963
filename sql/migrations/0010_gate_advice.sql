-- Gate advice: what each series' upstream gate does with nothing changed, as the nightly last
-- computed it (omni_tasks/gates/advice.py), one row per series, figure and night.
CREATE TABLE omni.gate_advice (
    benchmark   text NOT NULL,
    model       text NOT NULL,
    lane        text NOT NULL,
    branch      text NOT NULL,
    figure      text NOT NULL,
    nightly     date NOT NULL,
    gate        text NOT NULL,
    threshold   double precision NOT NULL,
    p_fail      double precision NOT NULL,
    p_fail_low  double precision NOT NULL,
    p_fail_high double precision NOT NULL,
    suggested   double precision NOT NULL,
    nights      integer NOT NULL,
    advice      jsonb NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (benchmark, model, lane, figure, nightly)
);
GRANT SELECT ON omni.gate_advice TO omni_reader;
