#!/usr/bin/env python3
"""Checks deploy/kubernetes/*.yaml offline, with the standard library only, against the fields of
the Kubernetes API objects they use (v1 Service, Secret, PersistentVolumeClaim, apps/v1
StatefulSet, kubeflow.org/v1 TFJob): unknown fields and wrong types are refused as kubectl's
strict validation would; names are DNS labels; container ports, probe handlers, volume mounts
and Secret references resolve; Service selectors pick a pod template's labels; each weftd pod's
TF_CONFIG script, run with sh for every index, gives the cluster the StatefulSets and headless
Services make. kubectl is tried too where it can work without a server, else that case skips
with the reason. TAP on stdout. Usage: check_kubernetes.py SOURCE_DIR"""
import glob
import json
import os
import re
import subprocess
import sys


# --- A small YAML reader: block mappings and sequences, plain/quoted scalars, `|` blocks, `{}`
# --- and `[]`, comments, `---`. Anything else is an error, so the manifests stay in this subset.

class YamlError(Exception):
    pass


def scalar(text, where):
    t = text.strip()
    if t in ("{}",):
        return {}
    if t in ("[]",):
        return []
    if t.startswith('"'):
        if not t.endswith('"') or len(t) < 2:
            raise YamlError(f"{where}: unterminated string {t}")
        return json.loads(t)
    if t.startswith("'"):
        if not t.endswith("'") or len(t) < 2:
            raise YamlError(f"{where}: unterminated string {t}")
        return t[1:-1].replace("''", "'")
    if t[:1] in "{[&*!|>%@`":
        raise YamlError(f"{where}: unsupported YAML {t!r}")
    if t in ("true", "false"):
        return t == "true"
    if t in ("null", "~", ""):
        return None
    if re.fullmatch(r"0[0-7]+", t):
        return int(t, 8)  # YAML 1.1, as Kubernetes reads it (defaultMode: 0440)
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", t):
        return int(t)
    return t


def strip_comment(line):
    out, quote = [], None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'" and (i == 0 or line[i - 1] in " :-[{,"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] == " "):
            break
        out.append(c)
    return "".join(out).rstrip()


def parse_yaml(text, name):
    docs, lines = [], []
    for raw in text.split("\n") + ["---"]:
        if raw.rstrip() == "---":
            if any(strip_comment(l).strip() for l in lines):
                docs.append(Parser(lines, name).parse())
            lines = []
        else:
            lines.append(raw)
    return docs


class Parser:
    def __init__(self, lines, name):
        self.lines, self.name, self.i = lines, name, 0

    def where(self):
        return f"{self.name} line {self.i + 1}"

    def next_content(self):
        while self.i < len(self.lines) and not strip_comment(self.lines[self.i]).strip():
            self.i += 1
        if self.i >= len(self.lines):
            return None, None
        line = strip_comment(self.lines[self.i])
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise YamlError(f"{self.where()}: a tab in the indentation")
        return len(line) - len(line.lstrip(" ")), line.strip()

    def parse(self):
        indent, _ = self.next_content()
        value = self.block(indent)
        if self.next_content()[0] is not None:
            raise YamlError(f"{self.where()}: unexpected indentation")
        return value

    def block(self, indent):
        _, text = self.next_content()
        if text.startswith("- ") or text == "-":
            return self.sequence(indent)
        return self.mapping(indent)

    def literal(self, parent_indent):
        out, block_indent = [], None
        while self.i < len(self.lines):
            raw = self.lines[self.i]
            if raw.strip():
                ind = len(raw) - len(raw.lstrip(" "))
                if ind <= parent_indent:
                    break
                block_indent = ind if block_indent is None else block_indent
                out.append(raw[block_indent:])
            else:
                out.append("")
            self.i += 1
        while out and out[-1] == "":
            out.pop()
        return "\n".join(out) + "\n"

    def value_after(self, rest, indent):
        """The value after 'key:' or '- ': inline, a `|` block, or a nested block."""
        if rest == "|":
            self.i += 1
            return self.literal(indent)
        if rest:
            self.i += 1
            return scalar(rest, self.where())
        self.i += 1
        nind, ntext = self.next_content()
        if nind is None or nind < indent or (nind == indent and not ntext.startswith("-")):
            return None
        if nind == indent and ntext.startswith("-"):
            return self.sequence(indent)
        return self.block(nind)

    def mapping(self, indent):
        out = {}
        while True:
            ind, text = self.next_content()
            if ind is None or ind < indent:
                return out
            if ind > indent:
                raise YamlError(f"{self.where()}: unexpected indentation")
            if text.startswith("-"):
                return out
            m = re.match(r"^([A-Za-z0-9_.\-/']+|\"[^\"]*\"):(?: (.*))?$", text)
            if not m:
                raise YamlError(f"{self.where()}: not 'key: value': {text!r}")
            key = m.group(1).strip('"')
            if key in out:
                raise YamlError(f"{self.where()}: key '{key}' given twice")
            out[key] = self.value_after((m.group(2) or "").strip(), indent)

    def sequence(self, indent):
        out = []
        while True:
            ind, text = self.next_content()
            if ind is None or ind < indent or not (text.startswith("- ") or text == "-"):
                return out
            if ind > indent:
                raise YamlError(f"{self.where()}: unexpected indentation")
            rest = text[1:].strip()
            if re.match(r"^[A-Za-z0-9_.\-/]+:( |$)", rest):
                # "- key: value" starts a mapping whose keys sit two columns in.
                line = self.lines[self.i]
                col = line.index("-") + 1
                col += len(line[col:]) - len(line[col:].lstrip(" "))
                self.lines[self.i] = " " * col + line[col:]
                out.append(self.mapping(col))
            else:
                out.append(self.value_after(rest, indent))


# --- The fields of the API objects used (kubernetes/api core/v1, apps/v1; kubeflow training
# --- operator v1). A dict is an object's fields, [x] a list of x, a type a scalar.

INT, STR, BOOL = int, str, bool
QUANTITY = (str, int)
LABELS = {"*": STR}
OBJECT_META = {"name": STR, "namespace": STR, "labels": LABELS, "annotations": LABELS}
EXEC = {"command": [STR]}
PROBE = {"exec": EXEC, "grpc": {"port": INT, "service": STR},
         "httpGet": {"path": STR, "port": (INT, STR), "scheme": STR},
         "tcpSocket": {"port": (INT, STR)}, "initialDelaySeconds": INT, "periodSeconds": INT,
         "timeoutSeconds": INT, "failureThreshold": INT, "successThreshold": INT}
ENV = {"name": STR, "value": STR,
       "valueFrom": {"fieldRef": {"fieldPath": STR, "apiVersion": STR},
                     "secretKeyRef": {"name": STR, "key": STR}}}
CONTAINER = {
    "name": STR, "image": STR, "imagePullPolicy": STR, "command": [STR], "args": [STR],
    "env": [ENV], "workingDir": STR,
    "ports": [{"name": STR, "containerPort": INT, "protocol": STR}],
    "readinessProbe": PROBE, "livenessProbe": PROBE, "startupProbe": PROBE,
    "resources": {"requests": {"cpu": QUANTITY, "memory": QUANTITY},
                  "limits": {"cpu": QUANTITY, "memory": QUANTITY}},
    "securityContext": {"allowPrivilegeEscalation": BOOL, "readOnlyRootFilesystem": BOOL,
                        "runAsNonRoot": BOOL, "runAsUser": INT,
                        "capabilities": {"drop": [STR], "add": [STR]}},
    "volumeMounts": [{"name": STR, "mountPath": STR, "readOnly": BOOL, "subPath": STR}],
}
VOLUME = {"name": STR, "emptyDir": {"medium": STR, "sizeLimit": QUANTITY},
          "secret": {"secretName": STR, "defaultMode": INT,
                     "items": [{"key": STR, "path": STR, "mode": INT}]},
          "persistentVolumeClaim": {"claimName": STR, "readOnly": BOOL}}
POD_SPEC = {"containers": [CONTAINER], "volumes": [VOLUME], "restartPolicy": STR,
            "securityContext": {"runAsNonRoot": BOOL, "runAsUser": INT, "runAsGroup": INT,
                                "fsGroup": INT},
            "serviceAccountName": STR, "terminationGracePeriodSeconds": INT}
POD_TEMPLATE = {"metadata": OBJECT_META, "spec": POD_SPEC}
SCHEMAS = {
    ("v1", "Service"): {"spec": {
        "clusterIP": STR, "publishNotReadyAddresses": BOOL, "selector": LABELS, "type": STR,
        "ports": [{"name": STR, "port": INT, "targetPort": (INT, STR), "protocol": STR}]}},
    ("v1", "Secret"): {"type": STR, "data": LABELS, "stringData": LABELS},
    ("v1", "PersistentVolumeClaim"): {"spec": {
        "accessModes": [STR], "storageClassName": STR,
        "resources": {"requests": {"storage": QUANTITY}}}},
    ("apps/v1", "StatefulSet"): {"spec": {
        "serviceName": STR, "replicas": INT, "podManagementPolicy": STR,
        "selector": {"matchLabels": LABELS}, "template": POD_TEMPLATE}},
    ("kubeflow.org/v1", "TFJob"): {"spec": {
        "runPolicy": {"cleanPodPolicy": STR, "backoffLimit": INT, "ttlSecondsAfterFinished": INT},
        "tfReplicaSpecs": {"*": {"replicas": INT, "restartPolicy": STR,
                                 "template": POD_TEMPLATE}}}},
}
for schema in SCHEMAS.values():
    schema.update({"apiVersion": STR, "kind": STR, "metadata": OBJECT_META})

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_fields(value, schema, path, errors):
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, got {value!r}")
            return
        for key, v in value.items():
            sub = schema.get(key, schema.get("*"))
            if sub is None:
                errors.append(f"{path}: unknown field \"{key}\"")
            else:
                check_fields(v, sub, f"{path}.{key}", errors)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {value!r}")
            return
        for k, v in enumerate(value):
            check_fields(v, schema[0], f"{path}[{k}]", errors)
    else:
        types = schema if isinstance(schema, tuple) else (schema,)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            errors.append(f"{path}: expected {'/'.join(t.__name__ for t in types)}, "
                          f"got {value!r}")


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


def self_test(objects):
    """Breaks a copy of the manifests one way at a time; returns the breakages not caught."""
    def find(kind, name):
        return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def container(o):
        return o["spec"]["template"]["spec"]["containers"][0]

    breakages = {
        "unknown container field": lambda: container(find("StatefulSet", "weft-ps")).update(
            {"comand": ["x"]}),
        "a Secret no manifest defines": lambda: find("StatefulSet", "weft-ps")["spec"][
            "template"]["spec"]["volumes"][0]["secret"].update({"secretName": "weft-tsl"}),
        "a Service selecting no pod": lambda: find("Service", "weft-worker")["spec"][
            "selector"].update({"weft-job": "workers"}),
        "replicas without TF_CONFIG's sizes": lambda: find("StatefulSet", "weft-worker")[
            "spec"].update({"replicas": 3}),
        "a port number as a string": lambda: container(find("StatefulSet", "weft-ps"))[
            "ports"][0].update({"containerPort": "2222"}),
    }
    missed = []
    for what, breakage in breakages.items():
        saved = json.dumps(objects)
        breakage()
        errors = []
        for o in objects:
            check_fields(o, SCHEMAS[(o["apiVersion"], o["kind"])], o["kind"], errors)
        try:
            check_semantics(objects, errors)
            check_tf_config(objects, errors)
        except (KeyError, TypeError, IndexError):
            errors.append("raised")
        if not errors:
            missed.append(what)
        objects[:] = json.loads(saved)
    return missed


def main():
    src = sys.argv[1]
    files = sorted(glob.glob(os.path.join(src, "deploy", "kubernetes", "*.yaml")))
    print(f"1..{len(files) + 4}")
    objects, n = [], 0
    for path in files:
        n += 1
        rel = os.path.relpath(path, src)
        errors = []
        try:
            docs = parse_yaml(open(path).read(), rel)
        except YamlError as e:
            docs, errors = [], [str(e)]
        for d in docs:
            key = (d.get("apiVersion"), d.get("kind"))
            if key not in SCHEMAS:
                errors.append(f"{rel}: unknown apiVersion/kind {key}")
                continue
            check_fields(d, SCHEMAS[key], f"{rel}: {key[1]} '{d.get('metadata', {}).get('name')}'",
                         errors)
            objects.append(d)
        status = "ok" if not errors and docs else "not ok"
        print(f"{status} {n} - {rel}: {len(docs)} objects, fields as the Kubernetes API has them")
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
    missed = self_test(objects)
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
