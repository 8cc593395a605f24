"""The one exception hierarchy of opforge.

Every error a user can see derives from :class:`OpforgeError`. Where a builtin exception is the
natural category (``ValueError`` for a bad value, ``TypeError`` for a wrong type, ``KeyError`` for
a missing name) the class inherits from it too, so ``except ValueError`` keeps working.

Messages follow one shape: *what failed*: *why* (facts with numbers). *What to do*. They name the
file, node (name and type), tensor, attribute and plugin (distribution and version) involved.
"""

from __future__ import annotations


class OpforgeError(Exception):
    """Root of every error raised by opforge and its plugins."""


# --- models and graphs ---------------------------------------------------------------------
class ModelFormatError(OpforgeError, ValueError):
    """A model file (ONNX, Paddle, IR) is malformed: bad bytes, bad offsets, bad structure."""


class ExternalDataError(ModelFormatError):
    """A tensor's data lives outside the model file and cannot be read safely."""


class BlobVersionError(ModelFormatError):
    """An exported compiled model was made by another blob format or other plugin versions."""


class ModelWriteError(OpforgeError, OSError):
    """A model cannot be saved where asked: no such folder, a directory in the way, no permission,
    or the output would overwrite the model being converted."""


class ModelValidationError(OpforgeError, ValueError):
    """A graph is structurally wrong: cycles, dangling inputs, duplicate names."""


class AttributeValidationError(ModelValidationError):
    """An attribute of a node is missing, of the wrong type, or out of range."""


class ShapeInferenceError(ModelValidationError):
    """The inputs of a node have types or shapes the operation cannot accept."""


class UnsupportedOpError(OpforgeError):
    """No operation, translator or kernel is registered for an op type."""


class NoReferenceError(UnsupportedOpError, NotImplementedError):
    """An op has no NumPy reference (``Op.evaluate``): it cannot be constant-folded or checked."""


class ConversionError(OpforgeError):
    """A frontend failed to translate a framework node into opforge operations."""


# --- plugins -------------------------------------------------------------------------------
class PluginError(OpforgeError):
    """Something about a plugin (an installed package that extends opforge) went wrong."""


class PluginLoadError(PluginError):
    """An entry point could not be imported or registered."""


class PluginHookError(PluginError):
    """A plugin's hook implementation raised; the message names the plugin, version and hook."""


class PluginConflictError(PluginError):
    """Two plugins claim the same op, kernel, frontend or device."""


class PluginValidationError(PluginError):
    """A plugin registered something malformed (wrong type, missing fields)."""


class TranslatorLayoutError(PluginValidationError):
    """A frontend's translator package breaks the one-translator-per-module layout."""


class ExtensionError(PluginError, ValueError):
    """An extension object (``OpExtension``, ``ConversionExtension``...) is invalid."""


# --- runtime -------------------------------------------------------------------------------
class DeviceError(OpforgeError):
    """Base class of device problems."""


class DeviceNotFoundError(DeviceError, KeyError):
    """The device name matches no installed device plugin."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DeviceUnavailableError(DeviceError):
    """The device plugin is installed but cannot run here (no driver, no hardware)."""


class PropertyError(OpforgeError, KeyError):
    """A property name is unknown to the device, or its value has the wrong type."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InferenceInputError(OpforgeError, ValueError):
    """An inference input has the wrong shape, is missing, or is not a model input."""


class InputTypeError(OpforgeError, TypeError):
    """An inference input has the wrong element type or is not an array."""


class KernelError(OpforgeError, RuntimeError):
    """A kernel failed while running a node; the message names the node and device."""


class RequestBusyError(OpforgeError, RuntimeError):
    """An infer request was used while it was still running."""


class ResourceLimitError(OpforgeError, MemoryError):
    """A model or tensor would need more memory than allowed."""


# --- plugin authoring tools ----------------------------------------------------------------
class ExtgenConfigError(OpforgeError, ValueError):
    """An ``opforge extgen`` configuration (JSON file or answers) is invalid; names the key."""


class OpcheckError(OpforgeError):
    """``opforge opcheck`` cannot run: an unknown target, or a target that provides no op."""
