"""`ledger export verify DIR`: the KSA batches in a directory checked offline, without the
store (docs/ksa.md, "Verify"). Each finding names the file.

For each manifest, in sequence order (`ksa-NNNNNN.manifest.xml`): valid against the
control manifest's XSD (with the W3C signature and encryption schemas it imports); its
signature verifies (against `--signing-cert` when given, else the certificate it carries);
its sequence number is its file name's and the one after the previous manifest's (a
missing or reordered batch breaks it); its `Previous_ManifestFile` is the SHA-256 of the
previous manifest file (the first batch of a chain: none); its generation time is not
before the previous one's; its batch file's SHA-256 and size are `Current_BatchFile` and
`File_Size_Compressed`; every file its `ds:Manifest` lists has the digest given; the data
file inside is valid against its record type's XSD, holds `Number_of_Records` records,
is `File_Size_Uncompressed` bytes, and its first and last `Extraction_Date` are
`First_Timestamp` and `Last_Timestamp`. A batch file no manifest names is a finding too.
Memory: one manifest and one data file (at most 512 records) at a time.

`against_register` (`ledger export verify --db`): the folder against the store's register of
what was sent (`proj_ksa_manifests`), which the files alone cannot show: the last batches
removed together (nothing after them names them), a batch never sent, a file changed and
re-signed.
"""
from __future__ import annotations

import base64
import hashlib
import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from projections import ksa
from projections.ksa_xml import DS, NO_PREVIOUS, sha256_file
from projections.regulator import Finding

MANIFEST_XSD = f"ksa_control_manifest_{ksa.VERSION}.xsd"
NAME = re.compile(r"ksa-(\d{6})\.manifest\.xml")
_ELEMENT_KIND = {ksa.element(k): k for k in ksa.KINDS}
# The files verified are untrusted: no entities expanded, nothing fetched.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


@dataclass
class Verified:
    findings: list[Finding] = field(default_factory=list)
    batches: int = 0
    records: int = 0


@dataclass
class _Chain:
    seq: int | None = None
    sha256: str | None = None
    name: str = ""
    generation: str = ""
    zip_path: str = ""


def verify(directory: Path, schemas: Path, signing_cert: bytes | None = None) -> Verified:
    out = Verified()
    manifests = sorted(p for p in directory.iterdir() if NAME.fullmatch(p.name))
    if not manifests:
        out.findings.append(Finding(str(directory), "no KSA manifest (ksa-NNNNNN.manifest.xml) in it"))
        return out
    manifest_schema = etree.XMLSchema(etree.parse(str(schemas / MANIFEST_XSD)))
    data_schemas = {k: etree.XMLSchema(etree.parse(str(schemas / ksa.xsd_name(k)))) for k in ksa.KINDS}
    chain, named = _Chain(), set()
    for path in manifests:
        raw = path.read_bytes()
        named |= _one(path, raw, chain, manifest_schema, data_schemas, signing_cert, out)
        chain.sha256, chain.name = hashlib.sha256(raw).hexdigest(), path.name
    for p in sorted(directory.iterdir()):
        if p.name.startswith("ksa-") and not NAME.fullmatch(p.name) and p.name not in named:
            out.findings.append(Finding(p.name, "a batch file no manifest names"))
    return out


def against_register(directory: Path, sent: Iterable[tuple[int, str, str, str, str]], operator_id: str) -> list[Finding]:
    """Every batch the register sent (`ksa_register.sent_batches`) from the folder's first
    manifest on is in the folder, its manifest and zip the ones sent (SHA-256); every manifest
    in the folder was sent. Batches before the folder's first are not looked for (a folder
    may start later: the older ones archived)."""
    on_disk = {int(m.group(1)): p for p in directory.iterdir() if (m := NAME.fullmatch(p.name))}
    first = min(on_disk, default=None)
    found = []
    for seq, manifest_file, manifest_sha256, batch_sha256, zip_path in sent:
        path = on_disk.pop(seq, None)
        if path is None:
            if first is not None and seq > first:
                found.append(Finding(manifest_file, f"missing: batch {seq} was sent (the register of operator "
                                                    f"{operator_id!r})"))
            continue
        if sha256_file(path) != manifest_sha256:
            found.append(Finding(path.name, f"not the manifest sent as batch {seq}: its SHA-256 is not the register's"))
        batch = directory / Path(zip_path).name
        if batch.is_file() and sha256_file(batch) != batch_sha256:
            found.append(Finding(batch.name, f"not the batch file sent as batch {seq}: its SHA-256 is not the "
                                             "register's"))
    found += [Finding(p.name, f"not in the register of operator {operator_id!r}: never sent from this store")
              for _, p in sorted(on_disk.items())]
    return found


def _one(path: Path, raw: bytes, chain: _Chain, manifest_schema: Any, data_schemas: dict[str, Any],
         signing_cert: bytes | None, out: Verified) -> set[str]:
    """One manifest's findings; the files it names."""
    name, find = path.name, out.findings
    try:
        doc = etree.fromstring(raw, _PARSER)
    except etree.XMLSyntaxError as exc:
        find.append(Finding(name, f"not XML: {exc}"))
        chain.seq = None if chain.seq is None else chain.seq + 1
        return set()
    if not manifest_schema.validate(doc):
        find.append(Finding(name, f"not valid against {MANIFEST_XSD}: {manifest_schema.error_log.last_error}"))
    find += [Finding(name, m) for m in _signature(raw, doc, signing_cert)]
    seq = int(doc.findtext("Manifest_Sequence_Number") or -1)
    find += [Finding(name, m) for m in _chain(name, doc, seq, chain)]
    chain.seq, chain.generation = seq, doc.findtext("Generation_Date") or ""
    out.batches += 1
    named = {str(r.get("URI")) for r in doc.iterfind(f"{{{DS}}}Manifest/{{{DS}}}Reference")}
    for ref in doc.iterfind(f"{{{DS}}}Manifest/{{{DS}}}Reference"):
        file = path.parent / str(ref.get("URI"))
        want = base64.b64decode(ref.findtext(f"{{{DS}}}DigestValue") or "").hex()
        if not file.is_file():
            find.append(Finding(file.name, f"missing (listed by {name})"))
        elif sha256_file(file) != want:
            find.append(Finding(file.name, f"its SHA-256 is not the one {name} lists"))
    zip_path = doc.findtext("Metadata/Absolute_Path_Current_Zip") or ""
    chain.zip_path = zip_path
    batch = path.parent / Path(zip_path).name
    named.add(batch.name)
    if not batch.is_file():
        find.append(Finding(batch.name, f"missing (the batch file of {name})"))
        return named
    if sha256_file(batch) != doc.findtext("Hash_Value/Current_BatchFile"):
        find.append(Finding(batch.name, f"its SHA-256 is not {name}'s Current_BatchFile"))
    if str(batch.stat().st_size) != doc.findtext("Metadata/File_Size_Compressed"):
        find.append(Finding(batch.name, f"its size is not {name}'s File_Size_Compressed"))
    find += [Finding(batch.name, m) for m in _data(batch, doc, data_schemas, out)]
    return named


def _signature(raw: bytes, doc: Any, signing_cert: bytes | None) -> list[str]:
    from signxml.exceptions import InvalidInput, InvalidSignature
    from signxml.verifier import XMLVerifier

    cert = signing_cert.decode() if signing_cert else _carried_cert(doc)
    if cert is None:
        return ["no certificate to verify its signature with"]
    try:
        XMLVerifier().verify(raw, x509_cert=cert)
    except (InvalidSignature, InvalidInput) as exc:
        return [f"its signature does not verify: {exc}"]
    return []


def _carried_cert(doc: Any) -> str | None:
    text = doc.findtext(f"{{{DS}}}Signature/{{{DS}}}KeyInfo/{{{DS}}}X509Data/{{{DS}}}X509Certificate")
    if not text:
        return None
    body = "".join(text.split())
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(body[i:i + 64] for i in range(0, len(body), 64)) + \
        "\n-----END CERTIFICATE-----\n"


def _chain(name: str, doc: Any, seq: int, chain: _Chain) -> list[str]:
    found = []
    match = NAME.fullmatch(name)
    if match and int(match.group(1)) != seq:
        found.append(f"its Manifest_Sequence_Number is {seq}, not its file name's {int(match.group(1))}")
    previous = doc.findtext("Hash_Value/Previous_ManifestFile")
    if chain.sha256 is None:
        if seq == 1 and previous != NO_PREVIOUS:
            found.append("the first batch names a previous manifest")
        return found
    if chain.seq is not None and seq != chain.seq + 1:
        found.append(f"sequence {seq} follows {chain.seq} ({chain.name}): a batch is missing or out of order")
    if previous != chain.sha256:
        found.append(f"its Previous_ManifestFile is not the SHA-256 of {chain.name}")
    if Path(doc.findtext("Metadata/Absolute_Path_Previous_Zip") or "").name != Path(chain.zip_path).name:
        found.append(f"its Absolute_Path_Previous_Zip is not {chain.name}'s zip")
    if (doc.findtext("Generation_Date") or "") < chain.generation:
        found.append(f"generated before {chain.name}")
    return found


def _data(batch: Path, doc: Any, schemas: dict[str, Any], out: Verified) -> list[str]:
    try:
        with zipfile.ZipFile(batch) as z:
            members = z.namelist()
            if len(members) != 1:
                return [f"holds {len(members)} files, not one data file"]
            data = z.read(members[0])
    # A changed byte can fail anywhere in the reader: its header (BadZipFile, ValueError), the
    # deflate stream (zlib.error, EOFError), a member's method or name (NotImplementedError, KeyError).
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, NotImplementedError) as exc:
        return [f"not a readable zip: {exc}"]
    found = []
    if str(len(data)) != doc.findtext("Metadata/File_Size_Uncompressed"):
        found.append("its data file's size is not the manifest's File_Size_Uncompressed")
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        return [*found, f"its data file is not XML: {exc}"]
    kind = _ELEMENT_KIND.get(root[0].tag if len(root) else "")
    if kind is None or not schemas[kind].validate(root):
        error = "an unknown record type" if kind is None else schemas[kind].error_log.last_error
        found.append(f"its data file is not valid against its XSD: {error}")
    out.records += len(root)
    if str(len(root)) != doc.findtext("Metadata/Number_of_Records"):
        found.append(f"its data file holds {len(root)} records, not the manifest's Number_of_Records")
    times = [r.findtext("Extraction_Date") for r in root]
    if times and (times[0] != doc.findtext("Metadata/First_Timestamp") or
                  times[-1] != doc.findtext("Metadata/Last_Timestamp")):
        found.append("its first or last Extraction_Date is not the manifest's First_Timestamp/Last_Timestamp")
    return found
