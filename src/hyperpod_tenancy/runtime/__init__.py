"""Code that runs in AWS or in the cluster (Lambda handlers); imports only the standard library and boto3."""
