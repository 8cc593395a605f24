"""The exported compiled model (``CompiledModel.export_model`` / ``Core.import_model``).

A blob is a zip archive, readable with any unzip tool:

* ``manifest.json``: ``format``, ``format_version``, the device, the compile config, which of
  its properties were left at the device's defaults (``defaulted``, format version 2), the
  model's hash, and the versions of opforge and of the plugins the compilation depends on;
* ``model.xml`` + ``model.bin``: the model as IR v11 (before the device's own transformations);
* ``device.payload`` (optional): what the device's ``Executable.export_payload`` returned, handed
  back to its ``Device.import_compiled`` on import. A device without one is compiled from the IR.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from opforge.errors import BlobVersionError, ModelFormatError

FORMAT = "opforge-compiled-model"
#: the blob layout this opforge writes and the newest it reads. 2: the manifest says which config
#: properties were the device's defaults (``defaulted``), which import resolves on its own host;
#: a version 1 blob's config is taken as chosen, all of it
FORMAT_VERSION = 2
_MANIFEST, _XML, _BIN, _PAYLOAD = "manifest.json", "model.xml", "model.bin", "device.payload"


@dataclasses.dataclass
class Blob:
    device: str
    config: dict[str, Any]
    versions: dict[str, str]
    model_hash: str
    xml: bytes
    weights: bytes
    payload: bytes | None = None
    format_version: int = FORMAT_VERSION
    #: the keys of ``config`` the compile left at the device's defaults (not set by the caller):
    #: a default may depend on the host (the CPU's precision is bf16 where it has bf16
    #: arithmetic), so import gives these the importing host's defaults
    defaulted: list[str] = dataclasses.field(default_factory=list)

    def chosen_config(self) -> dict[str, Any]:
        """The config the exporting compile chose: without the properties left at defaults."""
        return {k: v for k, v in self.config.items() if k not in set(self.defaulted)}

    def to_bytes(self) -> bytes:
        manifest = {
            "format": FORMAT, "format_version": self.format_version, "device": self.device,
            "config": self.config, "defaulted": sorted(self.defaulted), "versions": self.versions,
            "model_hash": self.model_hash, "payload": _PAYLOAD if self.payload is not None else None,
        }
        sink = io.BytesIO()
        # Weights are stored, not deflated: they barely compress and import can then read them
        # without a decompression pass.
        with zipfile.ZipFile(sink, "w") as z:
            z.writestr(_MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str),
                       compress_type=zipfile.ZIP_DEFLATED)
            z.writestr(_XML, self.xml, compress_type=zipfile.ZIP_DEFLATED)
            z.writestr(_BIN, self.weights, compress_type=zipfile.ZIP_STORED)
            if self.payload is not None:
                z.writestr(_PAYLOAD, self.payload, compress_type=zipfile.ZIP_STORED)
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, label: str = "blob") -> Blob:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                names = set(z.namelist())
                if _MANIFEST not in names:
                    raise ModelFormatError(f"{label}: not an opforge compiled-model blob (no {_MANIFEST}); "
                                           "expected what CompiledModel.export_model() wrote")
                manifest = json.loads(z.read(_MANIFEST))
                if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                    raise ModelFormatError(f"{label}: {_MANIFEST} does not describe an {FORMAT} blob")
                version = manifest.get("format_version")
                if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
                    raise BlobVersionError(
                        f"{label}: blob format version {version!r} is not readable by opforge "
                        f"(this one reads versions 1..{FORMAT_VERSION}); export it again with this opforge "
                        "or upgrade opforge")
                for key in ("device", "config", "versions", "model_hash"):
                    if key not in manifest:
                        raise ModelFormatError(f"{label}: {_MANIFEST} has no '{key}'")
                missing = {_XML, _BIN} - names
                if missing:
                    raise ModelFormatError(f"{label}: blob lacks {', '.join(sorted(missing))}")
                payload = z.read(_PAYLOAD) if manifest.get("payload") and _PAYLOAD in names else None
                defaulted = manifest.get("defaulted", [])
                if not isinstance(defaulted, list) or not all(isinstance(k, str) for k in defaulted):
                    raise ModelFormatError(f"{label}: {_MANIFEST}'s 'defaulted' must be a list of property "
                                           f"names, got {defaulted!r}")
                return cls(str(manifest["device"]), dict(manifest["config"]), dict(manifest["versions"]),
                           str(manifest["model_hash"]), z.read(_XML), z.read(_BIN), payload, version,
                           list(defaulted))
        except zipfile.BadZipFile as err:
            raise ModelFormatError(f"{label}: not an opforge compiled-model blob ({err}); expected what "
                                   "CompiledModel.export_model() wrote") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ModelFormatError(f"{label}: its {_MANIFEST} is not valid JSON ({err})") from None


def read_source(source: bytes | bytearray | str | os.PathLike[str] | IO[bytes]) -> tuple[bytes, str]:
    """The bytes of a blob given as bytes, a path or a binary stream, and a label for errors."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "compiled-model blob"
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if not p.is_file():
            raise ModelFormatError(f"compiled-model blob '{p}' does not exist")
        return p.read_bytes(), f"'{p}'"
    read = getattr(source, "read", None)
    if read is None:
        raise ModelFormatError(f"import_model needs bytes, a path or a binary stream, got {type(source).__name__}")
    data = read()
    if not isinstance(data, (bytes, bytearray)):
        raise ModelFormatError("import_model: the stream returned text; open the file in binary mode ('rb')")
    return bytes(data), "compiled-model stream"


def check_versions(label: str, recorded: Mapping[str, str], installed: Mapping[str, str]) -> None:
    """Refuse a blob made by other versions of opforge or of the plugins it depends on."""
    problems = []
    for dist, version in sorted(recorded.items()):
        have = installed.get(dist)
        if have is None:
            problems.append(f"{dist} {version} is not installed")
        elif have != version:
            problems.append(f"{dist} {version} made it, {have} is installed")
    if problems:
        pins = " ".join(f"{d}=={v}" for d, v in sorted(recorded.items()) if d in installed or d == "opforge")
        raise BlobVersionError(
            f"{label} was compiled by other versions: {'; '.join(problems)}. Export it again with this "
            f"installation, or install the versions it was made with ({pins})")
