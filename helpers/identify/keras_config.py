"""What a Keras model configuration (``config.json``, an HDF5 ``model_config``) says about loading it.

Shared by the ``.keras`` zip and HDF5 readers: the class configurations in it, the custom classes
it needs, whether a Lambda carries bytecode or a ``TFSMLayer`` loads a SavedModel (both run code:
``helpers.trust``), and the comments and report lines their loading code shares.

Example:
    >>> config = {"class_name": "Sequential", "config": {"layers": [
    ...     {"class_name": "Dense", "module": "keras.layers", "config": {}},
    ...     {"class_name": "Scale", "module": "my_layers", "registered_name": "Custom>Scale", "config": {}}]}}
    >>> custom_classes(config), has_lambda_code(config)
    (['Custom>Scale'], False)
"""

from __future__ import annotations

from typing import Any

from helpers.identify.answer import code_tail

__all__ = ["KERAS_CLASS_NAMES", "LAMBDA_NOTE", "MIXED_TRAP", "MODEL_REPORT", "QUANTIZED_TRAP", "TFSM_NOTE",
           "class_configs", "custom_classes", "has_lambda_code", "has_tfsm_layer", "keras_module", "policy_names"]

LAMBDA_NOTE = ("# A Lambda holds Python bytecode: safe_mode (the default) refuses it. safe_mode=False\n"
                "# runs that code: only for a file you trust (python -m helpers FILE --verify --trust).")


TFSM_NOTE = ("\n# A TFSMLayer loads the SavedModel its config names, which runs that folder's functions:\n"
              "# safe_mode (the default) refuses it; safe_mode=False only for a file you trust.")


def has_tfsm_layer(config: Any) -> bool:
    """Whether a configuration holds a ``TFSMLayer`` (it loads a SavedModel: ``helpers.trust.TFSM``)."""
    return any(item.get("class_name") == "TFSMLayer" for item in class_configs(config))



MODEL_REPORT = code_tail("""
    shapes = lambda tensors: ", ".join(str(tuple(t.shape)) for t in tensors)
    report = (f"{type(loaded).__name__} {loaded.name!r}: {len(loaded.weights)} weights, "
              f"input {shapes(loaded.inputs)} -> output {shapes(loaded.outputs)}")
    """)


def class_configs(config: Any):
    if isinstance(config, dict):
        if "class_name" in config:
            yield config
        for value in config.values():
            yield from class_configs(value)
    elif isinstance(config, list):
        for value in config:
            yield from class_configs(value)


def policy_names(config: Any) -> list[str]:
    """The dtype policy names a configuration's layers use (``int8_from_float32``, ``mixed_float16``).

    Example:
        >>> policy_names({"class_name": "Dense", "config": {"dtype": {"class_name": "DTypePolicy",
        ...               "config": {"name": "mixed_float16"}}}})
        ['mixed_float16']
    """
    found = set()
    for item in class_configs(config):
        if item.get("class_name", "").endswith("DTypePolicy"):
            inner = item.get("config") or {}
            if "mode" in inner:  # a quantized policy: mode and the policy it was made from
                found.add(f"{inner['mode']}_from_{inner.get('source_name', 'float32')}")
            elif inner.get("name"):
                found.add(str(inner["name"]))
    return sorted(found)


QUANTIZED_TRAP = ("quantized ({policies}): load_model rebuilds it; its weights go only into a twin "
                  "quantized the same way first: twin.quantize('{mode}'), then load_weights")
MIXED_TRAP = ("mixed precision ({policy}): load_model under the default float32 policy rebuilds a bare "
              "optimizer and drops the LossScaleOptimizer state with only a warning; set "
              "keras.mixed_precision.set_dtype_policy('{policy}') before load_model, then set it back")


def custom_classes(config: Any) -> list[str]:
    """Class names a configuration needs that Keras itself does not provide."""
    found = []
    for item in class_configs(config):
        registered, module = item.get("registered_name") or "", item.get("module") or ""
        if ">" in registered or (module and not keras_module(module)):
            found.append(registered or item["class_name"])
    return sorted(set(found))


_KERAS_PACKAGES = ("keras", "keras_hub", "keras_cv", "keras_nlp")


def keras_module(module: str) -> bool:
    """Whether ``module`` is Keras' own (``keras``, ``keras.layers``; not ``keras_mark``)."""
    return any(module == package or module.startswith(package + ".") for package in _KERAS_PACKAGES)


def has_lambda_code(config: Any) -> bool:
    for item in class_configs(config):
        settings = item.get("config") if isinstance(item.get("config"), dict) else {}
        if item["class_name"] == "Lambda" and (settings.get("function_type") == "lambda" or
                                               isinstance(settings.get("function"), dict) and
                                               settings["function"].get("class_name") == "__lambda__"):
            return True
    return False



# Class names Keras 3.15 itself provides (keras.layers, initializers, regularizers, constraints,
# optimizers; helpers.keras2.legacy_custom_objects; the model classes): a configuration naming only
# these needs no custom class, which is known without importing Keras (and TensorFlow with it).
# tests/test_identify_light.py checks this list against the Keras installed.
KERAS_CLASS_NAMES = frozenset("""
    Activation ActivityRegularization Adadelta Adafactor Adagrad Adam AdamW Adamax
    AdaptiveAveragePooling1D AdaptiveAveragePooling2D AdaptiveAveragePooling3D AdaptiveMaxPooling1D
    AdaptiveMaxPooling2D AdaptiveMaxPooling3D Add AdditiveAttention AlphaDropout Attention AugMix
    AutoContrast Average AveragePooling1D AveragePooling2D AveragePooling3D AvgPool1D AvgPool2D
    AvgPool3D BatchNormalization Bidirectional CategoryEncoding CenterCrop Concatenate Constant
    Constraint ContrastLimitedAdaptiveHistogramEqualization Conv1D Conv1DTranspose Conv2D
    Conv2DTranspose Conv3D Conv3DTranspose ConvLSTM1D ConvLSTM2D ConvLSTM3D Convolution1D
    Convolution1DTranspose Convolution2D Convolution2DTranspose Convolution3D Convolution3DTranspose
    Cropping1D Cropping2D Cropping3D CutMix Dense DepthwiseConv1D DepthwiseConv2D Discretization Dot
    Dropout ELU EinsumDense Embedding Equalization Flatten FlaxLayer Ftrl Functional GRU GRUCell
    GaussianDropout GaussianNoise GlobalAveragePooling1D GlobalAveragePooling2D
    GlobalAveragePooling3D GlobalAvgPool1D GlobalAvgPool2D GlobalAvgPool3D GlobalMaxPool1D
    GlobalMaxPool2D GlobalMaxPool3D GlobalMaxPooling1D GlobalMaxPooling2D GlobalMaxPooling3D
    GlorotNormal GlorotUniform GroupNormalization GroupQueryAttention HashedCrossing Hashing
    HeNormal HeUniform Identity IdentityInitializer Initializer Input InputLayer InputSpec
    IntegerLookup JaxLayer L1 L1L2 L2 LSTM LSTMCell Lamb Lambda Layer LayerNormalization LeakyReLU
    LecunNormal LecunUniform Lion LossScaleOptimizer Masking MaxNorm MaxNumBoundingBoxes MaxPool1D
    MaxPool2D MaxPool3D MaxPooling1D MaxPooling2D MaxPooling3D Maximum MelSpectrogram MinMaxNorm
    Minimum MixUp Model MultiHeadAttention MultiOptimizer Multiply Muon Nadam NonNeg Normalization
    Ones Optimizer OptimizerMap Orthogonal OrthogonalInitializer OrthogonalRegularizer PReLU Permute
    Pipeline RMSNormalization RMSprop RNN RandAugment RandomBrightness RandomColorDegeneration
    RandomColorJitter RandomContrast RandomCrop RandomElasticTransform RandomErasing RandomFlip
    RandomGaussianBlur RandomGrayscale RandomHue RandomInvert RandomNormal RandomPerspective
    RandomPosterization RandomRotation RandomSaturation RandomSharpness RandomShear
    RandomTranslation RandomUniform RandomZoom ReLU Regularizer RepeatVector Rescaling Reshape
    Resizing ReversibleEmbedding SGD STFT STFTInitializer STFTSpectrogram ScheduleFreeAdamW
    SeparableConv1D SeparableConv2D SeparableConvolution1D SeparableConvolution2D Sequential
    SimpleRNN SimpleRNNCell Softmax Solarization SpatialDropout1D SpatialDropout2D SpatialDropout3D
    SpectralNormalization StackedRNNCells StringLookup Subtract TFOpLambda TFSMLayer
    TextVectorization TimeDistributed TorchModuleWrapper TruncatedNormal UnitNorm UnitNormalization
    UpSampling1D UpSampling2D UpSampling3D VarianceScaling Wrapper ZeroPadding1D ZeroPadding2D
    ZeroPadding3D Zeros hard_sigmoid
""".split())
