import { Controller } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import { PrincipalDto, PrincipalListDto } from './dto/principal.dto.js';
import { GroupsService } from './groups.service.js';
import { PRINCIPAL_LIST_QUERY } from './list-queries.js';

@ApiTags('Principals')
@Controller('api/v2/auth/principals')
export class PrincipalsController {
  constructor(private readonly groups: GroupsService) {}

  @Route({
    method: 'GET',
    summary: 'Query principals',
    description: 'Users and groups in one list, by `displayName` (a user without one shows its userName).',
    access: { object: '/Users', action: 'Read' },
    list: PRINCIPAL_LIST_QUERY,
    response: PrincipalListDto,
  })
  queryPrincipals(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery): Promise<ListEnvelope<PrincipalDto>> {
    return this.groups.queryPrincipals(caller, query);
  }
}
