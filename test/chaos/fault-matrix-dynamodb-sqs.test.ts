import { describeMatrixCut } from './support/matrix-cut.js';

describeMatrixCut(['dynamodb', 'sqs']);
