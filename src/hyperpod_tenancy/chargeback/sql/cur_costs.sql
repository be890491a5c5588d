-- cur_costs: the cluster's bill for the month from a CUR 2.0 export, as (kind, name, cost, usage_amount):
--   kind 'instance-type' : the SageMaker HyperPod usage line `<region>-Cluster:ml.<type>` per instance type
--                          (cost, and instance-hours from the lines with a positive usage amount);
--   kind 'team'          : the lines a team's tag names (its stack's resources, its Studio apps and spaces),
--                          by team: charged to that team alone;
--   kind 'shared'        : every other line of the cluster, by category (FSx, EKS, system nodes, NAT, ...);
--   kind 'credit', 'refund': the lines of type Credit and Refund (`line_item_line_item_type`), by what they are
--                          against (an instance type, a team, a category): never in the lines above, so a credit
--                          does not lower a GPU-hour's price unseen; the report lists them;
--   kind 'total'         : the cluster's whole bill (every line above).
-- A line belongs to the cluster when its cluster cost allocation tag names it. Money is summed as
-- DECIMAL(38, 10), never as DOUBLE, so Athena and DuckDB return the same digits.
WITH lines AS (
  SELECT
    line_item_product_code AS product,
    line_item_usage_type AS usage_type,
    CAST(line_item_usage_amount AS DECIMAL(38, 10)) AS amount,
    CAST(line_item_unblended_cost AS DECIMAL(38, 10)) AS cost,
    NULLIF(element_at(resource_tags, {{team_tag}}), '') AS team,
    line_item_line_item_type AS line_type
  FROM {{cur}}
  WHERE billing_period = {{billing_period}}
    AND element_at(resource_tags, {{cluster_tag}}) = {{cluster}}
),
classified AS (
  SELECT
    CASE
      WHEN line_type IN ('Credit', 'Refund') THEN lower(line_type)
      WHEN product = 'AmazonSageMaker' AND usage_type LIKE '%Cluster:ml.%' THEN 'instance-type'
      WHEN team IS NOT NULL THEN 'team'
      ELSE 'shared'
    END AS kind,
    CASE
      WHEN product = 'AmazonSageMaker' AND usage_type LIKE '%Cluster:ml.%'
        THEN regexp_extract(usage_type, 'Cluster:(ml\..+)$', 1)
      WHEN team IS NOT NULL THEN team
      WHEN product = 'AmazonSageMaker' AND usage_type LIKE '%Cluster:VolumeUsage%' THEN 'hyperpod-volumes'
      WHEN product = 'AmazonFSx' THEN 'fsx'
      WHEN product = 'AmazonEKS' THEN 'eks'
      WHEN product = 'AmazonEC2' AND usage_type LIKE '%NatGateway%' THEN 'nat-gateway'
      WHEN product = 'AmazonEC2' AND usage_type LIKE '%BoxUsage%' THEN 'system-nodes'
      WHEN product = 'AmazonPrometheus' THEN 'prometheus'
      ELSE lower(product)
    END AS name,
    amount,
    cost
  FROM lines
)
SELECT
  kind,
  name,
  SUM(cost) AS cost,
  SUM(CASE WHEN amount > 0 THEN amount ELSE CAST(0 AS DECIMAL(38, 10)) END) AS usage_amount
FROM classified
GROUP BY kind, name
UNION ALL
SELECT
  'total' AS kind,
  'total' AS name,
  COALESCE(SUM(cost), CAST(0 AS DECIMAL(38, 10))) AS cost,
  CAST(0 AS DECIMAL(38, 10)) AS usage_amount
FROM classified
ORDER BY kind, name
