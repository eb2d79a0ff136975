import { Body, Controller } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import { InputListPipe } from '../common/validation/input-validation.pipe.js';
import type { Effect } from './access-evaluator.js';
import { AccessService } from './access.service.js';
import { AuditLog } from './audit-log.js';
import { EvaluateItemDto, ExplainItemDto, ExplainResultDto } from './dto/access.dto.js';
import { AuditRecordDto } from './dto/audit.dto.js';
import { EFFECTS } from './dto/role.dto.js';
import { AUDIT_LIST_QUERY } from './list-queries.js';

const MAX_QUESTIONS = 1000;

@ApiTags('Access control')
@Controller('api/v2/rbac')
export class AccessController {
  constructor(
    private readonly access: AccessService,
    private readonly audit: AuditLog,
  ) {}

  @Route({
    method: 'POST',
    path: 'evaluate',
    summary: "Evaluate the caller's access",
    description: `One decision (${EFFECTS.join(' or ')}) per item, in order, decided as a request would be; \`namespace\` is a name, absent or * for every namespace. At most ${MAX_QUESTIONS} items.`,
    access: { self: true },
    body: [EvaluateItemDto],
    responseSchema: { type: 'array', items: { type: 'string', enum: [...EFFECTS] } },
  })
  evaluateAccess(@CurrentCaller() caller: Caller, @Body(new InputListPipe(EvaluateItemDto, MAX_QUESTIONS)) items: EvaluateItemDto[]): Promise<Effect[]> {
    return this.access.evaluate(caller, items);
  }

  @Route({
    method: 'POST',
    path: 'explain',
    summary: "Explain a user's access",
    description: 'For any user (as a member of `groups` when given): the decision, and every permission of the bindings that apply, with whether it matches.',
    access: { object: '/RoleBindings', action: 'Read' },
    body: [ExplainItemDto],
    response: [ExplainResultDto],
  })
  explainAccess(@CurrentCaller() caller: Caller, @Body(new InputListPipe(ExplainItemDto, MAX_QUESTIONS)) items: ExplainItemDto[]): Promise<ExplainResultDto[]> {
    return this.access.explain(caller, items);
  }

  @Route({
    method: 'GET',
    path: 'audit',
    summary: 'Query audit records',
    description: 'Every access decision, newest first by default, as a plain array; kept for HUB_AUDIT_RETENTION_DAYS days.',
    access: { object: '/Audit', action: 'Read' },
    list: AUDIT_LIST_QUERY,
    response: [AuditRecordDto],
  })
  queryAudit(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery): Promise<AuditRecordDto[]> {
    return this.audit.query(caller, query);
  }
}
