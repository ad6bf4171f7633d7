"""What the tests of `cudagate audit` share: the fixtures' folder
(tests/fixtures/audit), the SOURCE_DATE_EPOCH of the reports, YAML streams
read back, and the CRDs' OpenAPI schemas (tests/fixtures/audit/crds) made
strict, which PolicyReports and OpenReports are validated against.

Used by audit_test.py and cluster_audit_test.py, which set SOURCE.
"""

import copy
import os

SOURCE = ""
EPOCH = "1764584444"  # SOURCE_DATE_EPOCH: the reports' timestamps


def audit_dir(*parts):
    return os.path.join(SOURCE, "tests", "fixtures", "audit", *parts)


def load_yaml_documents(text):
    import yaml  # python3-yaml
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def crd_schema(crd_file, version):
    """The openAPIV3Schema of `version` in a CRD file, made strict: where the schema lists an
    object's properties and says nothing of others, others are errors (the API server would
    prune them silently, losing what we wrote)."""
    import yaml
    with open(audit_dir("crds", crd_file)) as f:
        crd = yaml.safe_load(f)
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema = copy.deepcopy(v["schema"]["openAPIV3Schema"])
            break
    else:
        raise AssertionError(f"{crd_file} has no version {version}")

    def strict(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node \
                    and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                strict(value)
        elif isinstance(node, list):
            for value in node:
                strict(value)

    strict(schema)
    return crd["spec"]["names"]["kind"], crd["spec"]["group"] + "/" + version, schema
