"""Op types TensorFlow registers, known here without importing TensorFlow.

A graph (a SavedModel's, a frozen GraphDef) whose op types are all in ``KNOWN_OPS`` needs no
question to TensorFlow's op registry (``op_def_registry.get``); a graph with any other op is read
with TensorFlow, whose registry says whether this TensorFlow knows it (a library's op such as
``tensorflow_text``'s is not registered until that library is imported).

Example:
    >>> {"MatMul", "VarHandleOp"} <= KNOWN_OPS, "SentencepieceOp" in KNOWN_OPS
    (True, False)
"""

from __future__ import annotations

__all__ = ["KNOWN_OPS"]

# Op types every TensorFlow 2.x registers, those SavedModels of Keras, tf.Module and TF1 graph
# code use; a graph with another op is read with TensorFlow (its registry says whether it knows it).
# tests/test_identify_light.py checks that TensorFlow registers each of them.
KNOWN_OPS = frozenset("""
    Add AddN AddV2 All Any ArgMax ArgMin Assert AssignAddVariableOp AssignSubVariableOp AssignVariableOp
    AvgPool BatchMatMulV2 BiasAdd Cast Ceil ConcatV2 Const Conv2D Conv2DBackpropInput Cos Cumsum
    DepthwiseConv2dNative DisableCopyOnRead Einsum Elu Equal Erf Exp ExpandDims Fill Floor FloorDiv FloorMod
    FusedBatchNormV3 GatherV2 Greater GreaterEqual HashTableV2 Identity IdentityN IsVariableInitialized
    LeakyRelu Less LessEqual Log LogSoftmax LogicalAnd LogicalNot LogicalOr LookupTableFindV2
    LookupTableImportV2 MatMul Max MaxPool Maximum Mean MergeV2Checkpoints Min Minimum Mul Neg NoOp NotEqual
    OneHot Pack Pad PadV2 PartitionedCall Placeholder PlaceholderWithDefault Pow Prod RandomUniform Range
    RealDiv Relu Relu6 Reshape ResizeBilinear RestoreV2 Round Rsqrt SaveV2 Select
    SelectV2 Selu Shape ShardedFilename Sigmoid Sign Sin Size Slice Softmax Softplus Softsign Split SplitV
    Sqrt Square SquaredDifference Squeeze StatefulPartitionedCall StaticRegexFullMatch StopGradient
    StridedSlice StringJoin Sub Sum Tanh TensorListFromTensor TensorListGetItem TensorListReserve
    TensorListSetItem TensorListStack Tile Transpose Unpack VarHandleOp VarIsInitializedOp Variable
    VariableV2 While Where ZerosLike Assign Merge Switch Enter Exit NextIteration LoopCond ReadVariableOp
    Rank TruncatedNormal RandomStandardNormal Abs Reciprocal Bitcast ScatterNd Unique TopKV2
    BroadcastGradientArgs DivNoNan InitializeTableFromTextFileV2 MirrorPad ResourceApplyGradientDescent
    ResourceGather ResourceApplyAdam BroadcastTo MatrixDiag Cumprod Lgamma
    Conv3D Conv3DBackpropInputV2 IteratorFromStringHandle IteratorGetNext MaxPool3D
""".split())
