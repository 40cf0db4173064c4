"""Count the operations an iteration of the published Tacotron 2 and WaveGlow benchmarks launches, on a real step
(their ``operations_per_step`` in ``profiles/published-lambda-pytorch.yaml``).

Lambda's PyTorch benchmarks train NVIDIA DeepLearningExamples' Tacotron 2 and WaveGlow. An iteration's kernels do
not depend on the layers' widths, only on the structure, so each model is built here as those implementations
structure it (the same layers, in the same order, with the same element-wise operations between them) at tiny
widths, and one iteration's forward and backward pass is counted as ``advisor.track.torch`` counts a tracked step
(:class:`advisor.track.torch_run.StepCounter`: every dispatched operation that launches a kernel, views left out),
on this machine's CPU, in float32, the optimizer's step left out (as the language-model counts,
``scripts/count_llm_operations.py``).

- Tacotron 2 (Shen et al. 2018; DeepLearningExamples' ``tacotron2/model.py``): the encoder (three convolutions and a
  bidirectional LSTM over the characters), the autoregressive decoder one mel frame at a time with teacher forcing
  (the prenet, the attention LSTM cell, location-sensitive attention, the decoder LSTM cell, the frame and gate
  projections), the postnet's five convolutions and the loss. Counted at two decoder lengths, their difference is a
  frame's operations; the iteration is the rest plus ``FRAMES`` frames (the published workload's dependent steps:
  about 800 frames for a batch's longest utterance) over ``CHARACTERS`` characters.
- WaveGlow (Prenger et al. 2019; DeepLearningExamples' ``waveglow/model.py``): the spectrogram's upsampling, 12 flows
  of an invertible 1x1 convolution and an affine coupling whose WaveNet-like network has 8 weight-normalized dilated
  layers, two of the channels output early every 4 flows, and the flow's likelihood loss.

    python scripts/count_published_operations.py    # print the counts (scripts/published_workloads.yaml holds them)

Needs torch (the test extra).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FRAMES = 800  # the published Tacotron 2 workload's sequential_steps: a batch's longest utterance, in mel frames
CHARACTERS = 150  # about a batch's longest LJSpeech transcript, in characters
COUNTED_FRAMES = (4, 8)  # the two decoder lengths counted: their difference is four frames' operations


def _tacotron2(torch):
    """Tacotron 2 as DeepLearningExamples structures it, at tiny widths (the operations do not depend on them)."""
    nn, functional = torch.nn, torch.nn.functional
    mels, embedding, attention_dim, rnn, location_filters = 8, 16, 8, 16, 4

    def conv_block(channels_in: int, channels_out: int) -> nn.Module:
        return nn.Sequential(nn.Conv1d(channels_in, channels_out, 5, padding=2), nn.BatchNorm1d(channels_out))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convolutions = nn.ModuleList(conv_block(embedding, embedding) for _ in range(3))
            self.lstm = nn.LSTM(embedding, embedding // 2, batch_first=True, bidirectional=True)

        def forward(self, x):
            for conv in self.convolutions:
                x = functional.dropout(functional.relu(conv(x)), 0.5, self.training)
            outputs, _ = self.lstm(x.transpose(1, 2))
            return outputs

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query_layer = nn.Linear(rnn, attention_dim, bias=False)
            self.memory_layer = nn.Linear(embedding, attention_dim, bias=False)
            self.v = nn.Linear(attention_dim, 1, bias=False)
            self.location_conv = nn.Conv1d(2, location_filters, 31, padding=15, bias=False)
            self.location_dense = nn.Linear(location_filters, attention_dim, bias=False)

        def forward(self, query, memory, processed_memory, weights_cat, mask):
            processed_query = self.query_layer(query.unsqueeze(1))
            processed_location = self.location_dense(self.location_conv(weights_cat).transpose(1, 2))
            energies = self.v(torch.tanh(processed_query + processed_location + processed_memory)).squeeze(-1)
            energies = energies.masked_fill(mask, -float("inf"))
            weights = functional.softmax(energies, dim=1)
            return torch.bmm(weights.unsqueeze(1), memory).squeeze(1), weights

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.prenet = nn.ModuleList([nn.Linear(mels, 16, bias=False), nn.Linear(16, 16, bias=False)])
            self.attention_rnn = nn.LSTMCell(16 + embedding, rnn)
            self.attention = Attention()
            self.decoder_rnn = nn.LSTMCell(rnn + embedding, rnn)
            self.linear_projection = nn.Linear(rnn + embedding, mels)
            self.gate_layer = nn.Linear(rnn + embedding, 1)

        def forward(self, memory, targets, mask):
            batch, frames = memory.size(0), targets.size(2)
            go = memory.new_zeros(1, batch, mels)
            inputs = torch.cat((go, targets.permute(2, 0, 1)), dim=0)
            for linear in self.prenet:
                inputs = functional.dropout(functional.relu(linear(inputs)), 0.5, True)  # dropout at inference too
            hidden = [memory.new_zeros(batch, rnn) for _ in range(4)]
            weights = memory.new_zeros(batch, memory.size(1))
            cumulative = memory.new_zeros(batch, memory.size(1))
            context = memory.new_zeros(batch, embedding)
            processed_memory = self.attention.memory_layer(memory)
            outputs, gates = [], []
            for frame in range(frames):
                cell_input = torch.cat((inputs[frame], context), -1)
                hidden[0], hidden[1] = self.attention_rnn(cell_input, (hidden[0], hidden[1]))
                hidden[0] = functional.dropout(hidden[0], 0.1, self.training)
                weights_cat = torch.cat((weights.unsqueeze(1), cumulative.unsqueeze(1)), dim=1)
                context, weights = self.attention(hidden[0], memory, processed_memory, weights_cat, mask)
                cumulative = cumulative + weights
                hidden[2], hidden[3] = self.decoder_rnn(torch.cat((hidden[0], context), -1), (hidden[2], hidden[3]))
                hidden[2] = functional.dropout(hidden[2], 0.1, self.training)
                both = torch.cat((hidden[2], context), dim=1)
                outputs.append(self.linear_projection(both))
                gates.append(self.gate_layer(both))
            return torch.stack(outputs, dim=2), torch.stack(gates, dim=1).squeeze(-1)

    class Tacotron2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(148, embedding)
            self.encoder = Encoder()
            self.decoder = Decoder()
            channels = [mels, 16, 16, 16, 16, mels]
            self.postnet = nn.ModuleList(conv_block(a, b) for a, b in itertools.pairwise(channels))

        def forward(self, text, targets, mask):
            memory = self.encoder(self.embedding(text).transpose(1, 2))
            mel, gate = self.decoder(memory, targets, mask)
            x = mel
            for number, conv in enumerate(self.postnet):
                x = conv(x)
                x = functional.dropout(torch.tanh(x) if number < len(self.postnet) - 1 else x, 0.5, self.training)
            return mel, mel + x, gate

    def iteration(model, frames: int) -> None:
        batch = 2
        text = torch.randint(1, 148, (batch, CHARACTERS))
        targets = torch.randn(batch, mels, frames)
        mask = torch.zeros(batch, CHARACTERS, dtype=torch.bool)
        gate_targets = torch.zeros(batch, frames)
        mel, postnet, gate = model(text, targets, mask)
        loss = (
            functional.mse_loss(mel, targets)
            + functional.mse_loss(postnet, targets)
            + functional.binary_cross_entropy_with_logits(gate, gate_targets)
        )
        loss.backward()

    return Tacotron2(), iteration


def _waveglow(torch):
    """WaveGlow as DeepLearningExamples structures it, at tiny widths (the operations do not depend on them)."""
    nn = torch.nn
    weight_norm = torch.nn.utils.parametrizations.weight_norm
    mels, channels, layers, flows, group, early_every, early_size = 8, 8, 8, 12, 8, 4, 2

    class WN(nn.Module):
        def __init__(self, inputs: int) -> None:
            super().__init__()
            self.start = weight_norm(nn.Conv1d(inputs, channels, 1))
            self.end = nn.Conv1d(channels, 2 * inputs, 1)
            self.in_layers = nn.ModuleList(
                weight_norm(nn.Conv1d(channels, 2 * channels, 3, dilation=2**i, padding=2**i)) for i in range(layers)
            )
            self.cond_layers = nn.ModuleList(
                weight_norm(nn.Conv1d(mels * group, 2 * channels, 1)) for _ in range(layers)
            )
            outputs = [2 * channels] * (layers - 1) + [channels]  # the last layer's output is all skip
            self.res_skip_layers = nn.ModuleList(weight_norm(nn.Conv1d(channels, width, 1)) for width in outputs)

        def forward(self, audio, spect):
            audio = self.start(audio)
            output = None
            for i in range(layers):
                acts = self.in_layers[i](audio) + self.cond_layers[i](spect)
                acts = torch.tanh(acts[:, :channels]) * torch.sigmoid(acts[:, channels:])
                res_skip = self.res_skip_layers[i](acts)
                if i < layers - 1:
                    audio = res_skip[:, :channels] + audio
                    skip = res_skip[:, channels:]
                else:
                    skip = res_skip
                output = skip if output is None else skip + output
            return self.end(output)

    class WaveGlow(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.upsample = nn.ConvTranspose1d(mels, mels, 1024, stride=256)
            remaining, self.convinv, self.wn = group, nn.ModuleList(), nn.ModuleList()
            for k in range(flows):
                if k % early_every == 0 and k > 0:
                    remaining -= early_size
                self.convinv.append(nn.Conv1d(remaining, remaining, 1, bias=False))
                self.wn.append(WN(remaining // 2))

        def forward(self, spect, audio):
            spect = self.upsample(spect)[:, :, : audio.size(1)]
            spect = spect.unfold(2, group, group).permute(0, 2, 1, 3)
            spect = spect.contiguous().view(spect.size(0), spect.size(1), -1).permute(0, 2, 1)
            audio = audio.unfold(1, group, group).permute(0, 2, 1)
            early, log_s_list, log_det_list = [], [], []
            for k in range(flows):
                if k % early_every == 0 and k > 0:
                    early.append(audio[:, :early_size, :])
                    audio = audio[:, early_size:, :]
                weight = self.convinv[k].weight.squeeze()
                log_det_list.append(audio.size(0) * audio.size(2) * torch.logdet(weight))
                audio = self.convinv[k](audio)
                half = audio.size(1) // 2
                audio_0, audio_1 = audio[:, :half, :], audio[:, half:, :]
                output = self.wn[k](audio_0, spect)
                log_s, b = output[:, half:, :], output[:, :half, :]
                audio = torch.cat([audio_0, torch.exp(log_s) * audio_1 + b], 1)
                log_s_list.append(log_s)
            early.append(audio)
            return torch.cat(early, 1), log_s_list, log_det_list

    def iteration(model, _frames: int) -> None:
        samples = 1024
        spect = torch.randn(2, mels, samples // 256)
        audio = torch.randn(2, samples)
        z, log_s_list, log_det_list = model(spect, audio)
        log_s_total = sum(torch.sum(log_s) for log_s in log_s_list)
        loss = torch.sum(z * z) / 2 - log_s_total - sum(log_det_list)
        (loss / z.numel()).backward()

    return WaveGlow(), iteration


def count_iteration(build, frames: int) -> int:
    """The operations of one iteration's forward and backward pass of the model ``build`` makes (warmed first)."""
    import torch  # only the counting needs the framework

    from advisor.track.torch_run import StepCounter

    torch.manual_seed(0)
    model, iteration = build(torch)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    for _ in range(2):  # warm: the first steps create the optimizer's states and the autograd caches
        iteration(model, frames)
        optimizer.step()
        optimizer.zero_grad()
    counter = StepCounter(model)
    with counter:
        iteration(model, frames)
    return counter.operations


def counts() -> dict[str, dict[str, int]]:
    """Per workload: the operations of an iteration (Tacotron 2: a decoder frame's and the rest's too, which the
    published workload states as its recurrent phase's ``operations_per_step`` and its own)."""
    shorter, longer = (count_iteration(_tacotron2, frames) for frames in COUNTED_FRAMES)
    per_frame = (longer - shorter) // (COUNTED_FRAMES[1] - COUNTED_FRAMES[0])
    rest = shorter - COUNTED_FRAMES[0] * per_frame
    return {
        "tacotron2": {"per_frame": per_frame, "rest": rest, "iteration": rest + FRAMES * per_frame},
        "waveglow": {"iteration": count_iteration(_waveglow, 0)},
    }


def main(argv: list[str]) -> int:
    import torch

    print(f"counted with torch {torch.__version__} on a CPU, float32, forward and backward")
    for workload, found in counts().items():
        print(workload, ", ".join(f"{key} {value:,}" for key, value in found.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
