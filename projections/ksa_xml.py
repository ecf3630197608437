"""The KSA batch on disk (docs/ksa.md, "Files"): one data file of at most 512 records of
one type, zipped; the zip encrypted to the recipients (XML Encryption: a fresh AES-256-GCM
key per batch, wrapped by RSA-OAEP for each recipient's certificate); and the
`ControlManifest`, signed (XML Signature, enveloped, RSA-SHA256, by signxml), chaining the
batch to the one before by SHA-256.

    ksa-000001.zip             the data file `ksa-000001-wok_game.xml` inside (the operator's copy)
    ksa-000001.zip.enc         what the regulator reads: IV (12) | AES-256-GCM ciphertext | tag (16)
    ksa-000001.manifest.xml    the signed manifest
"""
from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from xml.sax.saxutils import escape

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from lxml import etree

from projections.ksa import CANCELLATION, Listing, element

DS: str = "http://www.w3.org/2000/09/xmldsig#"
XENC: str = "http://www.w3.org/2001/04/xmlenc#"
RSA_OAEP = XENC + "rsa-oaep-mgf1p"
AES256_GCM = "http://www.w3.org/2009/xmlenc11#aes256-gcm"
SHA256 = XENC + "sha256"
NO_PREVIOUS = "0" * 64  # the first manifest's Previous_ManifestFile: no manifest before it
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the zip member's time: fixed, so a batch's zip is its records' bytes
CHUNK = 1 << 16


@dataclass(frozen=True)
class Record:
    """One record of a data file: its id, the record it replaces (None: a first record), and
    its specific elements (`ksa.Subject.fields`; a cancellation's KSA_Type and Cancelled_Record_ID)."""

    record_id: str
    replaces: str | None
    fields: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Keys:
    """The signer's key and certificate, and the recipients' certificates (PEM files)."""

    signing_key: bytes
    signing_cert: bytes
    recipients: tuple[x509.Certificate, ...]

    @classmethod
    def load(cls, signing_key: Path, signing_cert: Path, recipients: Sequence[Path]) -> Keys:
        """Refuses (ValueError) a key that is not an RSA private key, or a certificate that
        is not PEM X.509 with an RSA key: found now, before anything is written."""
        key = serialization.load_pem_private_key(signing_key.read_bytes(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError(f"{signing_key}: not an RSA private key")
        cert = signing_cert.read_bytes()
        if x509.load_pem_x509_certificate(cert).public_key() != key.public_key():
            raise ValueError(f"{signing_cert}: its public key is not that of {signing_key}")
        certs = tuple(x509.load_pem_x509_certificate(p.read_bytes()) for p in recipients)
        for path, c in zip(recipients, certs, strict=True):
            if not isinstance(c.public_key(), rsa.RSAPublicKey):
                raise ValueError(f"{path}: the recipient's certificate has no RSA key")
        return cls(signing_key.read_bytes(), cert, certs)


def _xml(name: str, value: object, depth: int) -> Iterator[str]:
    """An element, in pieces: a nested one (a tuple of (name, value) pairs, or a game
    session's `Listing`) is never rendered whole."""
    pad = "  " * depth
    if isinstance(value, (tuple, Listing)):
        yield f"{pad}<{name}>\n"
        for n, v in value:
            yield from _xml(n, v, depth + 1)
        yield f"{pad}</{name}>\n"
    else:
        yield f"{pad}<{name}>{escape(str(value))}</{name}>\n"


DATA_HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<Root>\n'  # a data file: its `Root` of 1 to 512 records
DATA_TAIL = b"</Root>\n"


def write_record(out: BinaryIO, kind: str, record: Record, extraction: str, operator_id: str,
                 data_safe_id: str) -> None:
    """One record of a data file (between `DATA_HEAD` and `DATA_TAIL`), UTF-8, written as it
    is made."""
    general: list[tuple[str, object]] = [("Record_ID", record.record_id), ("Extraction_Date", extraction),
                                         ("Operator_ID", operator_id), ("Data_Safe_ID", data_safe_id)]
    if record.replaces is not None and kind != CANCELLATION:
        general.append(("Replaced_Record_ID", record.replaces))
    for piece in _xml(element(kind), tuple(general) + record.fields, 1):
        out.write(piece.encode())


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def write_zip(path: Path, member: str, data: BinaryIO, size: int) -> None:
    """The zip of one data file, `size` bytes read from `data`, deflated as it is read (the
    bytes `ZipFile.writestr` writes: the size is known before)."""
    info = zipfile.ZipInfo(member, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size = size
    with zipfile.ZipFile(path, "x") as z, z.open(info, "w") as dest:
        while chunk := data.read(CHUNK):
            dest.write(chunk)


def encrypt_file(src: Path, dst: Path, key: bytes) -> None:
    """XML Encryption 1.1's AES-GCM octets: IV | ciphertext | tag, streamed."""
    iv = os.urandom(12)
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        fout.write(iv)
        while chunk := fin.read(CHUNK):
            fout.write(enc.update(chunk))
        fout.write(enc.finalize())
        fout.write(enc.tag)


def decrypt_file(src: Path, key: bytes) -> bytes:
    """The inverse of `encrypt_file` (tests, and a recipient's check)."""
    data = src.read_bytes()
    dec = Cipher(algorithms.AES(key), modes.GCM(data[:12], data[-16:])).decryptor()
    return dec.update(data[12:-16]) + dec.finalize()


def unwrap_key(encrypted_key: etree._Element, private_key: rsa.RSAPrivateKey) -> bytes:
    value = encrypted_key.findtext(f"{{{XENC}}}CipherData/{{{XENC}}}CipherValue") or ""
    return private_key.decrypt(base64.b64decode(value), _oaep())


def _oaep() -> padding.OAEP:
    return padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)  # rsa-oaep-mgf1p


@dataclass(frozen=True)
class ManifestFacts:
    operator_id: str
    data_safe_id: str
    generation: str
    seq: int
    previous_sha256: str
    batch_sha256: str
    records: int
    first: str
    last: str
    size_uncompressed: int
    size_compressed: int
    zip_path: str
    previous_zip_path: str
    enc_name: str
    digests: tuple[tuple[str, str], ...]  # (file name, SHA-256 hex) of the batch's files


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    e = etree.SubElement(parent, tag, attrs)
    e.text = text
    return e


def manifest(facts: ManifestFacts, keys: Keys, session_key: bytes) -> bytes:
    """The signed `ControlManifest` of one batch."""
    from signxml.algorithms import CanonicalizationMethod, DigestAlgorithm, SignatureMethod
    from signxml.algorithms import SignatureConstructionMethod as methods
    from signxml.signer import XMLSigner

    root = etree.Element("ControlManifest", nsmap={"ds": DS, "xenc": XENC})
    for tag, text in (("Operator_ID", facts.operator_id), ("Data_Safe_ID", facts.data_safe_id),
                      ("Generation_Date", facts.generation), ("Manifest_Sequence_Number", str(facts.seq))):
        _sub(root, tag, text)
    hashes_ = _sub(root, "Hash_Value")
    _sub(hashes_, "Previous_ManifestFile", facts.previous_sha256)
    _sub(hashes_, "Current_BatchFile", facts.batch_sha256)
    meta = _sub(root, "Metadata")
    for tag, text in (("Number_of_Records", str(facts.records)), ("First_Timestamp", facts.first),
                      ("Last_Timestamp", facts.last), ("File_Size_Uncompressed", str(facts.size_uncompressed)),
                      ("File_Size_Compressed", str(facts.size_compressed)),
                      ("Absolute_Path_Current_Zip", facts.zip_path),
                      ("Absolute_Path_Previous_Zip", facts.previous_zip_path)):
        _sub(meta, tag, text)
    for i, cert in enumerate(keys.recipients, 1):
        _encrypted_key(root, cert, session_key, i)
    data = _sub(root, f"{{{XENC}}}EncryptedData", Id="batch", MimeType="application/zip")
    _sub(data, f"{{{XENC}}}EncryptionMethod", Algorithm=AES256_GCM)
    _sub(_sub(data, f"{{{XENC}}}CipherData"), f"{{{XENC}}}CipherReference", URI=facts.enc_name)
    files = _sub(root, f"{{{DS}}}Manifest", Id="files")
    for name, digest in facts.digests:
        ref = _sub(files, f"{{{DS}}}Reference", URI=name)
        _sub(ref, f"{{{DS}}}DigestMethod", Algorithm=SHA256)
        _sub(ref, f"{{{DS}}}DigestValue", base64.b64encode(bytes.fromhex(digest)).decode())
    signer = XMLSigner(method=methods.enveloped, signature_algorithm=SignatureMethod.RSA_SHA256,
                       digest_algorithm=DigestAlgorithm.SHA256,
                       c14n_algorithm=CanonicalizationMethod.EXCLUSIVE_XML_CANONICALIZATION_1_0)
    signed = signer.sign(root, key=keys.signing_key, cert=keys.signing_cert.decode())
    return bytes(etree.tostring(signed, xml_declaration=True, encoding="UTF-8"))


def _encrypted_key(root: etree._Element, cert: x509.Certificate, session_key: bytes, i: int) -> None:
    public = cert.public_key()
    assert isinstance(public, rsa.RSAPublicKey)  # checked by Keys.load
    ek = _sub(root, f"{{{XENC}}}EncryptedKey", Id=f"key-{i}", Recipient=cert.subject.rfc4514_string())
    method = _sub(ek, f"{{{XENC}}}EncryptionMethod", Algorithm=RSA_OAEP)
    _sub(method, f"{{{DS}}}DigestMethod", Algorithm=DS + "sha1")
    x509_data = _sub(_sub(ek, f"{{{DS}}}KeyInfo"), f"{{{DS}}}X509Data")
    der = cert.public_bytes(serialization.Encoding.DER)
    _sub(x509_data, f"{{{DS}}}X509Certificate", base64.b64encode(der).decode())
    _sub(_sub(ek, f"{{{XENC}}}CipherData"), f"{{{XENC}}}CipherValue",
         base64.b64encode(public.encrypt(session_key, _oaep())).decode())
    _sub(_sub(ek, f"{{{XENC}}}ReferenceList"), f"{{{XENC}}}DataReference", URI="#batch")

