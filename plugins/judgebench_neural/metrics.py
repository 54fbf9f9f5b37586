"""Every metric this plugin registers."""

from __future__ import annotations

from judgebench_neural.bertscore import BertScore
from judgebench_neural.embedding import EmbeddingCosine
from judgebench_neural.learned import Classifier, Comet
from judgebench_neural.likelihood import Likelihood
from judgebench_neural.mauve import Mauve
from judgebench_neural.vendi import Vendi

ALL = (BertScore, EmbeddingCosine, Mauve, Vendi, Likelihood, Classifier, Comet)
