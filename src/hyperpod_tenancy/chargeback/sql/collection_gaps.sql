-- collection_gaps: every stretch of the month in which a collector wrote nothing for longer than its threshold.
-- Sources: our `node` snapshots (the 5-minute node inventory) and the usage-report operator's `heartdub`
-- heartbeat (the operator writes its `clusterqueue` snapshots only when a queue changes, so their own silence
-- proves nothing; see queries.py). The month's start and end stand in for records, so a collector that wrote
-- nothing all month is one gap from the start to the end. Inside a gap the last snapshot holds (hourly_usage,
-- hourly_capacity): this query only finds the gaps, the report lists them.
WITH records AS (
  SELECT 'node' AS table_name, "timestamp" AS ts
  FROM {{node}}
  WHERE cluster = {{cluster}}
    AND year = {{year}} AND month = {{month}}
    AND "timestamp" >= {{month_start}} AND "timestamp" < {{month_end}}
  UNION ALL
  SELECT 'heartdub' AS table_name, "timestamp" AS ts
  FROM {{heartdub}}
  WHERE cluster = {{cluster}}
    AND year = {{year}} AND month = {{month}}
    AND "timestamp" >= {{month_start}} AND "timestamp" < {{month_end}}
  UNION ALL
  SELECT table_name, ts
  FROM (
    VALUES
      ('node', {{month_start}}),
      ('node', {{month_end}}),
      ('heartdub', {{month_start}}),
      ('heartdub', {{month_end}})
  ) AS fences (table_name, ts)
),
marks AS (
  SELECT DISTINCT table_name, ts FROM records
),
spans AS (
  SELECT table_name, ts AS gap_start, LEAD(ts) OVER (PARTITION BY table_name ORDER BY ts) AS gap_end
  FROM marks
)
SELECT
  table_name,
  date_format(gap_start, '%Y-%m-%d %H:%i:%s.%f') AS gap_start,
  date_format(gap_end, '%Y-%m-%d %H:%i:%s.%f') AS gap_end
FROM spans
WHERE gap_end IS NOT NULL
  AND date_diff('millisecond', gap_start, gap_end) > 1000 * CASE table_name
    WHEN 'node' THEN {{node_gap_seconds}}
    ELSE {{heartdub_gap_seconds}}
  END
ORDER BY table_name, gap_start
