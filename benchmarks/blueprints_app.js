// EKS Blueprints (npm @aws-quickstart/eks-blueprints 1.19) with N application teams: the yardstick of
// benchmarks/synth_scale.py. Run from a scratch folder holding the package (see synth_scale.py's docstring).
// TEAMS (default 20) application teams, each with users, a GPU ResourceQuota and namespace labels, on a managed
// node group cluster; account and region fixed and the zone lookup pre-seeded, so no credentials are needed.
const cdk = require("aws-cdk-lib");
const iam = require("aws-cdk-lib/aws-iam");
const blueprints = require("@aws-quickstart/eks-blueprints");

const account = "123456789012";
const region = "us-east-1";
const teams = Number(process.env.TEAMS || "20");

async function main() {
  const app = new cdk.App({
    context: {
      [`availability-zones:account=${account}:region=${region}`]: ["us-east-1a", "us-east-1b", "us-east-1c"],
    },
  });
  const applicationTeams = [];
  for (let i = 0; i < teams; i++) {
    const name = `team-${String(i).padStart(3, "0")}`;
    applicationTeams.push(
      new blueprints.ApplicationTeam({
        name,
        users: [new iam.ArnPrincipal(`arn:aws:iam::${account}:role/${name}-user`)],
        namespaceLabels: { "hyperpod-tenancy.io/team": name },
        namespaceHardLimits: { "requests.nvidia.com/gpu": "4", "limits.nvidia.com/gpu": "4" },
      }),
    );
  }
  await blueprints.EksBlueprint.builder()
    .account(account)
    .region(region)
    .version(cdk.aws_eks.KubernetesVersion.V1_33 ?? "auto")
    .clusterProvider(new blueprints.MngClusterProvider({ version: cdk.aws_eks.KubernetesVersion.V1_33 }))
    .teams(...applicationTeams)
    .buildAsync(app, "blueprints");
  app.synth();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
