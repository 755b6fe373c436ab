#!/usr/bin/env python3
"""Checks deploy/kubernetes/*.yaml offline against the Kubernetes API schema: PyYAML reads them
(python3-yaml) and every object is walked through the model classes Debian's python3-kubernetes
generates from the Kubernetes OpenAPI schema (v1 Service, Secret, PersistentVolumeClaim, apps/v1
StatefulSet, ...): unknown fields, wrong types, missing required fields and values outside the
enums the schema names are refused with their path. Kubeflow's TFJob, a CRD the client lacks, is
read against its operator's fields, its pod templates as core/v1 PodTemplateSpec by the models.
Beyond the schema: names are DNS labels; volume mounts and Secret references resolve; Service
selectors pick a pod template's labels; each weftd pod's TF_CONFIG script, run with sh for every
index, gives the cluster the StatefulSets and headless Services make. kubectl is tried too where
it can work without a server, else that case skips with the reason; without the Python packages
the schema cases skip with the reason. TAP on stdout. Usage: check_kubernetes.py SOURCE_DIR"""
import glob
import json
import os
import re
import subprocess
import sys


# --- The API objects against the Kubernetes OpenAPI schema, as Debian's python3-kubernetes (the
# --- official client) carries it: every model class is generated from the schema, with
# --- openapi_types (each field's type: str, int, bool, object for IntOrString, list[X],
# --- dict(str, X), or another model) and attribute_map (the field's JSON name), and its constructor
# --- refuses a required field left out (client-side validation). The walk below reads a manifest
# --- through those tables field by field, so an unknown field, a wrong type or a missing required
# --- field is refused where it sits, with its path. The 22.x client checks no enum itself; the
# --- schema's descriptions name the allowed values ("One of Always, OnFailure, Never."), and those
# --- are checked where a description names them.

K8S_MODELS = None  # kubernetes.client.models, once imported
K8S_CONFIG = None  # a Configuration with client_side_validation on
ENUM_TEXT = re.compile(r"(?:One of|Must be|must be one of|Valid values are)[: ]+"
                       r"((?:\"?[A-Z][A-Za-z]*\"?(?:, | or |, or ))+\"?[A-Z][A-Za-z]*\"?)[.;]")


def enum_values(cls, attr):
    """The values a field's schema description allows, or None where it names none."""
    prop = getattr(cls, attr, None)
    doc = getattr(getattr(prop, "fset", None), "__doc__", "") or ""
    m = ENUM_TEXT.search(" ".join(doc.split()))
    if not m:
        return None
    return set(re.findall(r"[A-Z][A-Za-z]*", m.group(1)))


def scalar_ok(value, type_name):
    if type_name == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if type_name == "int":
        return isinstance(value, int)
    if type_name == "float":
        return isinstance(value, (int, float))
    if type_name == "object":  # IntOrString (a port by number or name) in the objects used here
        return isinstance(value, (int, str))
    return isinstance(value, str)  # str, and datetime/date as the API writes them


def check_model(value, type_name, path, errors):
    """Reads value as the schema's type_name; returns the model (None where an error was found)."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {value!r}")
            return None
        return [check_model(v, type_name[5:-1], f"{path}[{k}]", errors)
                for k, v in enumerate(value)]
    if type_name.startswith("dict("):
        inner = type_name[5:-1].split(", ", 1)[1]
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {value!r}")
            return None
        return {k: check_model(v, inner, f"{path}.{k}", errors) for k, v in value.items()}
    cls = getattr(K8S_MODELS, type_name, None)
    if cls is None:
        if not scalar_ok(value, type_name):
            errors.append(f"{path}: expected {type_name}, got {value!r}")
        return value
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({type_name}), got {value!r}")
        return None
    attr_of = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    before = len(errors)
    kwargs = {}
    for key, v in value.items():
        attr = attr_of.get(key)
        if attr is None:
            errors.append(f"{path}: unknown field \"{key}\" (not in {type_name})")
            continue
        kwargs[attr] = check_model(v, cls.openapi_types[attr], f"{path}.{key}", errors)
        allowed = enum_values(cls, attr)
        if allowed and isinstance(v, str) and v not in allowed:
            errors.append(f"{path}.{key}: \"{v}\" is not one of {sorted(allowed)}")
    if len(errors) > before:
        return None
    try:
        return cls(local_vars_configuration=K8S_CONFIG, **kwargs)
    except ValueError as e:  # "Invalid value for `container_port`, must not be `None`"
        m = re.search(r"`(\w+)`, must not be `None`", str(e))
        if m:
            errors.append(f"{path}: required field "
                          f"\"{cls.attribute_map.get(m.group(1), m.group(1))}\" is missing "
                          f"({type_name})")
        else:
            errors.append(f"{path}: {e}")
        return None


def model_name(api_version, kind):
    """The client's class for apiVersion/kind: v1 Service -> V1Service, apps/v1 -> V1StatefulSet."""
    return api_version.rsplit("/", 1)[-1].capitalize() + kind


# Kubeflow's TFJob (kubeflow/training-operator, kubeflow.org/v1) is a CRD the client does not
# carry: its own fields are listed here from the operator's types (TFJobSpec, ReplicaSpec,
# RunPolicy); its metadata and pod templates are core/v1 objects and read by the models.
INT, STR, BOOL = int, str, bool
TFJOB = {"apiVersion": STR, "kind": STR, "metadata": "V1ObjectMeta", "spec": {
    "runPolicy": {"cleanPodPolicy": ("None", "Running", "All"), "backoffLimit": INT,
                  "ttlSecondsAfterFinished": INT, "activeDeadlineSeconds": INT},
    "successPolicy": STR, "enableDynamicWorker": BOOL,
    "tfReplicaSpecs": {"*": {"replicas": INT,
                             "restartPolicy": ("Always", "OnFailure", "Never", "ExitCode"),
                             "template": "V1PodTemplateSpec"}}}}
TFJOB_ROLES = {"PS", "Worker", "Chief", "Master", "Evaluator"}


def check_fields(value, schema, path, errors):
    """value against a hand-written field table (dict: fields, tuple: allowed strings, a type, or a
    model's name)."""
    if isinstance(schema, str):
        check_model(value, schema, path, errors)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, got {value!r}")
            return
        for key, v in value.items():
            sub = schema.get(key, schema.get("*"))
            if sub is None:
                errors.append(f"{path}: unknown field \"{key}\"")
            else:
                check_fields(v, sub, f"{path}.{key}", errors)
    elif isinstance(schema, tuple):
        if value not in schema:
            errors.append(f"{path}: \"{value}\" is not one of {list(schema)}")
    elif not isinstance(value, schema) or (isinstance(value, bool) and schema is not bool):
        errors.append(f"{path}: expected {schema.__name__}, got {value!r}")


def check_object(obj, path, errors):
    """One manifest object against its schema: the client's model, or TFJOB for a TFJob."""
    if not isinstance(obj, dict):
        errors.append(f"{path}: expected an object, got {obj!r}")
        return
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if (api_version, kind) == ("kubeflow.org/v1", "TFJob"):
        check_fields(obj, TFJOB, path, errors)
        for role in (obj.get("spec") or {}).get("tfReplicaSpecs") or {}:
            if role not in TFJOB_ROLES:
                errors.append(f"{path}: tfReplicaSpecs role \"{role}\" is not one of "
                              f"{sorted(TFJOB_ROLES)}")
        return
    if not isinstance(api_version, str) or not isinstance(kind, str) or \
            getattr(K8S_MODELS, model_name(api_version, kind), None) is None:
        errors.append(f"{path}: apiVersion/kind {api_version}/{kind} is in no schema known here")
        return
    check_model(obj, model_name(api_version, kind), path, errors)


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def pod_templates(obj):
    if obj["kind"] == "StatefulSet":
        yield obj["metadata"]["name"], obj["spec"]["template"]
    elif obj["kind"] == "TFJob":
        for role, spec in obj["spec"]["tfReplicaSpecs"].items():
            yield f"{obj['metadata']['name']}/{role}", spec["template"]


def check_semantics(objects, errors):
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    claims = {o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"}
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    templates = []
    for o in objects:
        name = o["metadata"].get("name", "")
        if not DNS_LABEL.match(name) or len(name) > 63:
            errors.append(f"{o['kind']} '{name}': metadata.name is not a DNS label")
        for owner, t in pod_templates(o):
            templates.append((owner, t))
            spec = t["spec"]
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            for v in volumes.values():
                handlers = [k for k in ("emptyDir", "secret", "persistentVolumeClaim") if k in v]
                if len(handlers) != 1:
                    errors.append(f"{owner}: volume '{v['name']}' needs exactly one source")
                if "secret" in v:
                    sname = v["secret"]["secretName"]
                    if sname not in secrets:
                        errors.append(f"{owner}: volume '{v['name']}' names Secret '{sname}', "
                                      "which no manifest defines")
                    mode = v["secret"].get("defaultMode", 0o644)
                    if not 0 <= mode <= 0o777:
                        errors.append(f"{owner}: defaultMode {mode} is not from 0 to 0777")
                if "persistentVolumeClaim" in v and v["persistentVolumeClaim"]["claimName"] \
                        not in claims:
                    errors.append(f"{owner}: volume '{v['name']}' names a claim no manifest "
                                  "defines")
            if not spec.get("containers"):
                errors.append(f"{owner}: a pod needs at least one container")
            for c in spec.get("containers", []):
                cname = f"{owner}/{c.get('name')}"
                for key in ("name", "image"):
                    if key not in c:
                        errors.append(f"{cname}: container field '{key}' is required")
                for p in c.get("ports", []):
                    if not 1 <= p.get("containerPort", 0) <= 65535:
                        errors.append(f"{cname}: containerPort {p.get('containerPort')} is not "
                                      "from 1 to 65535")
                    if len(p.get("name", "")) > 15:
                        errors.append(f"{cname}: port name '{p['name']}' is over 15 characters")
                for m in c.get("volumeMounts", []):
                    if m["name"] not in volumes:
                        errors.append(f"{cname}: volumeMount '{m['name']}' has no volume")
                    for path in re.findall(r"(" + re.escape(m["mountPath"]) + r"/[\w.\-]+)",
                                           json.dumps(c)):
                        vol = volumes.get(m["name"], {})
                        if "secret" in vol and vol["secret"]["secretName"] in secrets:
                            sec = secrets[vol["secret"]["secretName"]]
                            keys = set(sec.get("data", {})) | set(sec.get("stringData", {}))
                            if path.rsplit("/", 1)[1] not in keys:
                                errors.append(f"{cname}: {path} is not a key of Secret "
                                              f"'{sec['metadata']['name']}' ({sorted(keys)})")
                for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                    if probe in c:
                        handlers = [k for k in ("exec", "grpc", "httpGet", "tcpSocket")
                                    if k in c[probe]]
                        if len(handlers) != 1:
                            errors.append(f"{cname}: {probe} needs exactly one handler")
    for name, svc in services.items():
        selector = svc["spec"].get("selector", {})
        picked = [o for o, t in templates
                  if all(t["metadata"].get("labels", {}).get(k) == v
                         for k, v in selector.items())]
        if not picked:
            errors.append(f"Service '{name}': selector {selector} matches no pod template")
        for port in svc["spec"].get("ports", []):
            target = port.get("targetPort", port.get("port"))
            for owner, t in templates:
                if owner not in picked:
                    continue
                ports = [p for c in t["spec"]["containers"] for p in c.get("ports", [])]
                if not any(target in (p.get("name"), p["containerPort"]) for p in ports):
                    errors.append(f"Service '{name}': targetPort {target!r} is no container "
                                  f"port of {owner}")
    for o in objects:
        if o["kind"] != "StatefulSet":
            continue
        name, spec = o["metadata"]["name"], o["spec"]
        svc = services.get(spec["serviceName"])
        if not svc:
            errors.append(f"StatefulSet '{name}': serviceName '{spec['serviceName']}' is no "
                          "Service of the manifests")
        elif svc["spec"].get("clusterIP") != "None":
            errors.append(f"StatefulSet '{name}': Service '{svc['metadata']['name']}' is not "
                          "headless (clusterIP: None)")
        labels = spec["template"]["metadata"].get("labels", {})
        for k, v in spec["selector"]["matchLabels"].items():
            if labels.get(k) != v:
                errors.append(f"StatefulSet '{name}': selector {k}={v} is not a template label")


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def check_tf_config(objects, errors):
    """Runs every weftd pod's start script with sh up to its exec, for each StatefulSet index,
    and compares TF_CONFIG with what the StatefulSets and Services make."""
    sets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "StatefulSet"}
    expected_cluster = {}
    for name, o in sets.items():
        job = name.removeprefix("weft-")
        port = o["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
        svc = o["spec"]["serviceName"]
        expected_cluster[job] = [f"{name}-{k}.{svc}:{port}" for k in range(o["spec"]["replicas"])]
    checked = 0
    for name, o in sets.items():
        c = o["spec"]["template"]["spec"]["containers"][0]
        command = c.get("command", [])
        if command[:2] != ["/bin/sh", "-c"] or "exec weftd" not in command[2]:
            errors.append(f"StatefulSet '{name}': the container does not run "
                          "`/bin/sh -c ... exec weftd`")
            continue
        if "--cluster-from tf_config" not in command[2]:
            errors.append(f"StatefulSet '{name}': weftd is not run with --cluster-from tf_config")
        script = command[2].replace("exec weftd", 'printf "%s" "$TF_CONFIG"; exit 0; weftd', 1)
        for index in range(o["spec"]["replicas"]):
            for how, extra in (("pod-index label", {"POD_INDEX": str(index)}),
                               ("hostname", {"HOSTNAME": f"{name}-{index}"})):
                env = {"PATH": "/usr/bin:/bin", **env_of(c), **extra}
                r = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True,
                                   text=True, timeout=30)
                try:
                    tf = json.loads(r.stdout)
                except ValueError:
                    errors.append(f"{name}-{index} ({how}): TF_CONFIG is not JSON: "
                                  f"{r.stdout!r} {r.stderr!r}")
                    continue
                want = {"cluster": expected_cluster,
                        "task": {"type": name.removeprefix("weft-"), "index": index}}
                if tf != want:
                    errors.append(f"{name}-{index} ({how}): TF_CONFIG {tf} but the manifests "
                                  f"make {want}")
                checked += 1
    return checked


def self_test(objects, with_schema):
    """Breaks a copy of the manifests one way at a time; returns the breakages not caught."""
    def find(kind, name):
        return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def container(o):
        return o["spec"]["template"]["spec"]["containers"][0]

    def tfjob_container():
        return find("TFJob", "weft-train")["spec"]["tfReplicaSpecs"]["Worker"]["template"][
            "spec"]["containers"][0]

    breakages = {
        "a Secret no manifest defines": lambda: find("StatefulSet", "weft-ps")["spec"][
            "template"]["spec"]["volumes"][0]["secret"].update({"secretName": "weft-tsl"}),
        "a Service selecting no pod": lambda: find("Service", "weft-worker")["spec"][
            "selector"].update({"weft-job": "workers"}),
        "replicas without TF_CONFIG's sizes": lambda: find("StatefulSet", "weft-worker")[
            "spec"].update({"replicas": 3}),
    }
    if with_schema:
        breakages.update({
            "unknown container field": lambda: container(find("StatefulSet", "weft-ps")).update(
                {"comand": ["x"]}),
            "a port number as a string": lambda: container(find("StatefulSet", "weft-ps"))[
                "ports"][0].update({"containerPort": "2222"}),
            "a required field left out (a volume mount's mountPath)": lambda: container(
                find("StatefulSet", "weft-ps"))["volumeMounts"][0].pop("mountPath"),
            "an unknown field deep in a TFJob's pod template": lambda: tfjob_container().setdefault(
                "resources", {}).update({"limit": {"cpu": "1"}}),
            "an imagePullPolicy the schema does not name": lambda: tfjob_container().update(
                {"imagePullPolicy": "Sometimes"}),
            "a TFJob restartPolicy Kubeflow does not have": lambda: find("TFJob", "weft-train")[
                "spec"]["tfReplicaSpecs"]["PS"].update({"restartPolicy": "Sometimes"}),
            "a Service port as a list": lambda: find("Service", "weft-ps")["spec"]["ports"][0]
            .update({"port": [2222]}),
        })
    missed = []
    for what, breakage in breakages.items():
        saved = json.dumps(objects)
        breakage()
        errors = []
        if with_schema:
            for o in objects:
                check_object(o, o["kind"], errors)
        try:
            check_semantics(objects, errors)
            check_tf_config(objects, errors)
        except (KeyError, TypeError, IndexError):
            errors.append("raised")
        if not errors:
            missed.append(what)
        objects[:] = json.loads(saved)
    return missed


def import_schema():
    """Imports PyYAML and the Kubernetes client's models; returns why not, or None.
    meson runs this with the interpreter that has python3-yaml and python3-kubernetes
    (tests/meson.build), which need not be the python3 first on PATH."""
    global yaml, K8S_MODELS, K8S_CONFIG
    missing = []
    try:
        import yaml
    except ImportError:
        missing.append("python3-yaml")
    try:
        import kubernetes.client
        K8S_MODELS = kubernetes.client.models
        K8S_CONFIG = kubernetes.client.Configuration()
        K8S_CONFIG.client_side_validation = True
    except ImportError:
        missing.append("python3-kubernetes")
    if missing:
        return (f"{' and '.join(missing)} not installed for {sys.executable} "
                "(scripts/install-deps.sh installs them)")
    return None


def main():
    src = sys.argv[1]
    files = sorted(glob.glob(os.path.join(src, "deploy", "kubernetes", "*.yaml")))
    why_not = import_schema()
    print(f"1..{len(files) + 4}")
    if why_not and "python3-yaml" in why_not:
        for n in range(1, len(files) + 5):
            print(f"ok {n} # SKIP {why_not}")
        return 0
    objects, n = [], 0
    for path in files:
        n += 1
        rel = os.path.relpath(path, src)
        errors = []
        try:
            docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
        except yaml.YAMLError as e:
            docs, errors = [], [f"{rel}: {' '.join(str(e).split())}"]
        for d in docs:
            if why_not is None:
                name = d.get("metadata", {}).get("name") if isinstance(d, dict) else None
                check_object(d, f"{rel}: {d.get('kind') if isinstance(d, dict) else '?'} "
                             f"'{name}'", errors)
            if isinstance(d, dict):
                objects.append(d)
        what = f"{rel}: {len(docs)} objects read against the Kubernetes API schema"
        if why_not and not errors:
            print(f"ok {n} - {what} # SKIP {why_not}")
            continue
        print(f"{'ok' if not errors and docs else 'not ok'} {n} - {what}")
        for e in errors:
            print(f"# {e}")
    errors = []
    try:
        check_semantics(objects, errors)
    except (KeyError, TypeError) as e:
        errors.append(f"a required field is missing: {e}")
    n += 1
    print(f"{'not ok' if errors else 'ok'} {n} - references resolve: Secrets, volumes, claims, "
          "Service selectors and ports, headless Services of the StatefulSets")
    for e in errors:
        print(f"# {e}")
    errors = []
    try:
        checked = check_tf_config(objects, errors)
    except (KeyError, IndexError, subprocess.SubprocessError) as e:
        checked, errors = 0, [f"cannot run the TF_CONFIG scripts: {e}"]
    n += 1
    ok = not errors and checked > 0
    print(f"{'ok' if ok else 'not ok'} {n} - TF_CONFIG of {checked} pod starts (index from the "
          "pod-index label and from the hostname) matches the StatefulSets and Services")
    for e in errors:
        print(f"# {e}")
    n += 1
    missed = self_test(objects, why_not is None)
    print(f"{'not ok' if missed else 'ok'} {n} - each check refuses a manifest broken on purpose")
    for m in missed:
        print(f"# not caught: {m}")
    n += 1
    kubectl = subprocess.run(["sh", "-c", "command -v kubectl"], capture_output=True, text=True)
    if kubectl.returncode != 0:
        print(f"ok {n} # SKIP kubectl is not installed")
    else:
        # Client-side only, no server: some kubectl builds still ask a server for its API list.
        r = subprocess.run(["kubectl", "create", "--dry-run=client", "--validate=false", "-o",
                            "json", "--request-timeout=5s", "-f", files[0]],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "KUBECONFIG": "/dev/null"})
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["no output"])[-1][:150]
            print(f"ok {n} # SKIP kubectl cannot read manifests without a server here: {why}")
        else:
            bad = []
            for path in files:
                r = subprocess.run(["kubectl", "create", "--dry-run=client", "--validate=false",
                                    "-o", "json", "--request-timeout=5s", "-f", path],
                                   capture_output=True, text=True, timeout=60,
                                   env={**os.environ, "KUBECONFIG": "/dev/null"})
                if r.returncode != 0:
                    bad.append(f"{path}: {r.stderr.strip()}")
            print(f"{'not ok' if bad else 'ok'} {n} - kubectl create --dry-run=client reads "
                  "every manifest")
            for b in bad:
                print(f"# {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
